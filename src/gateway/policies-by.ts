import { UnknownPolicyError, type PolicyCatalog, resolvePolicies } from "../core/policy.js";
import type { Policy } from "../core/types.js";
import { ValidationError, describeValue } from "../core/validation.js";
import { splitJsonPath } from "../overrides/key-source.js";
import type { BodyFields } from "./body-fields.js";

/**
 * A route's `policiesBy` (docs/counting.md, "Policies by a request field"): the policies a
 * request is limited by, picked by a field of its JSON body (the model an LLM API is asked
 * for). Each value's stack is the route's own `policies` (if any) followed by the value's list;
 * a value not listed takes `default`'s. Parsed whole at load: every stack is known then.
 *
 * @example { "policiesBy": { "json": "model", "policies": { "gpt-4o": ["gpt4o-tpm"] }, "default": ["default-tpm"] } }
 */
export interface PoliciesBy {
  /** The body field read (`model`). */
  path: string[];
  /** Each listed value's whole stack. */
  stacks: ReadonlyMap<string, Policy[]>;
  /** The stack of a value not listed. */
  fallback: Policy[];
}

/** At most this many values listed: a provider's models, with room. */
const MAX_VALUES = 256;
const FORM = '{ "json": "model", "policies": { "gpt-4o": ["gpt4o-tpm"] }, "default": ["default-tpm"] }';

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/** Resolves one list, a config error naming the field when a policy is unknown. */
function policiesAt(input: unknown, catalog: PolicyCatalog, field: string): Policy[] {
  try {
    return resolvePolicies(input, catalog, field);
  } catch (error) {
    if (error instanceof UnknownPolicyError) throw new ValidationError(error.field, error.message.slice(error.field.length + 2));
    throw error;
  }
}

/** The route's own policies followed by `more`, refusing a policy named in both (its one state would count twice). */
function stackOf(base: readonly Policy[], more: readonly Policy[], field: string): Policy[] {
  for (const [i, policy] of more.entries()) {
    if (base.some((one) => one.name === policy.name)) throw new ValidationError(`${field}.${i}`, `names "${policy.name}", which the route's own policies already stack: every request of the route counts it`);
  }
  const stack = [...base, ...more];
  if (stack.length > 16) throw new ValidationError(field, `makes a stack of ${stack.length} policies with the route's own: at most 16`);
  return stack;
}

/** Validates `policiesBy` (`field`: `routes.0.policiesBy`) against the route's own policies (`base`, maybe none). */
export function parsePoliciesBy(input: unknown, base: readonly Policy[], catalog: PolicyCatalog, field: string): PoliciesBy {
  if (!isObject(input)) throw new ValidationError(field, `must be an object like ${FORM}, got ${describeValue(input)}`);
  for (const name of Object.keys(input)) {
    if (name !== "json" && name !== "policies" && name !== "default") throw new ValidationError(`${field}.${name}`, `is not a known field (policiesBy is ${FORM})`);
  }
  if (typeof input.json !== "string") throw new ValidationError(`${field}.json`, `must be the dotted path of a body field, like "model", got ${describeValue(input.json)}`);
  const path = splitJsonPath(input.json);
  if (typeof path === "string") throw new ValidationError(`${field}.json`, path);
  const listed = input.policies;
  if (!isObject(listed)) throw new ValidationError(`${field}.policies`, `must be an object of values and their policies, like { "gpt-4o": ["gpt4o-tpm"] }, got ${describeValue(listed)}`);
  const values = Object.keys(listed);
  if (values.length === 0 || values.length > MAX_VALUES) throw new ValidationError(`${field}.policies`, `must list from 1 to ${MAX_VALUES} values, got ${values.length}`);
  const stacks = new Map<string, Policy[]>();
  for (const value of values) {
    const at = `${field}.policies.${value}`;
    if (value === "") throw new ValidationError(at, "must be a value the field can have: not empty");
    stacks.set(value, stackOf(base, policiesAt(listed[value], catalog, at), at));
  }
  let fallback: Policy[];
  if (input.default !== undefined) fallback = stackOf(base, policiesAt(input.default, catalog, `${field}.default`), `${field}.default`);
  else if (base.length > 0) fallback = [...base];
  else throw new ValidationError(`${field}.default`, "is required when the route has no policies of its own: the policies of a value not listed");
  return { path, stacks, fallback };
}

/**
 * The stack for a request, or why none: the field absent from the body, not a string, named
 * twice, or the body without fields (too long, not JSON). Such a request is refused (400), as
 * one without its key is: limited by another stack, it would spend a budget that is not its own.
 */
export function pickPolicies(by: PoliciesBy, body: BodyFields | undefined): { policies: Policy[]; value: string } | { refused: string } {
  const name = by.path.join(".");
  if (!body || body.reason !== undefined) return { refused: `its policies are picked by the body's JSON field ${name}, which could not be read: ${body?.reason ?? "the request has no body"}` };
  const field = body.field(by.path);
  if (!field.found) return { refused: field.repeated ? `its policies are picked by the body's JSON field ${name}, which the body names more than once: send it once` : `its policies are picked by the body's JSON field ${name}, which the body does not carry` };
  if (typeof field.value !== "string") return { refused: `its policies are picked by the body's JSON field ${name}, which must be a string, got ${describeValue(field.value)}` };
  return { policies: by.stacks.get(field.value) ?? by.fallback, value: field.value };
}
