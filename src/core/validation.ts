import * as z from "zod/mini";
import type * as zc from "zod/v4/core";

/**
 * Bad input from a user: a body, a config file, a flag or an RPC argument.
 * `field` is the dotted path of the offending value (`policies.per-minute.limit`),
 * so the HTTP layer can answer 400 with a detail that names it.
 */
export class ValidationError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(field ? `${field}: ${message}` : message);
    this.name = "ValidationError";
    this.field = field;
  }
}

/**
 * `true` when A and B are the same type (to the compiler, not only assignable both ways, which
 * a missing optional field passes). The published declarations name no zod type (zod is bundled
 * into dist/, not installed), so a type that stands for a schema's output there is written out
 * and held to the schema with `type … = Assert<Same<Written, z.output<typeof schema>>>`.
 */
export type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Compiles only when T is `true`. */
export type Assert<T extends true> = T;

/** Joins a field prefix and a sub-path: `joinPath("policy", ["limit"])` → `policy.limit`. */
export function joinPath(prefix: string, path: readonly PropertyKey[]): string {
  return [prefix, ...path.map(String)].filter((part) => part !== "").join(".");
}

/**
 * Parses `value` with a zod schema and throws a ValidationError naming the first bad field,
 * with the rule and the value that broke it.
 * @internal (as every export that names a zod type: the published declarations name none)
 */
export function parseWith<S extends zc.$ZodType>(schema: S, value: unknown, prefix: string): zc.output<S> {
  const result = z.safeParse(schema, value, { reportInput: true });
  if (result.success) return result.data;
  const issues = result.error.issues;
  // An unknown key comes first: it is most often a typo of a field that is then missing,
  // and "limt: is not a known field" says more than "limit: is required".
  const issue = issues.find((one) => one.code === "unrecognized_keys") ?? issues[0]!;
  let path = issue.path;
  let message = issue.message;
  if (issue.code === "unrecognized_keys") {
    path = [...path, issue.keys[0]!];
    message = "is not a known field";
    const missing = issues.find((one) => one.code === "invalid_type" && one.input === undefined && one.path.length === issue.path.length + 1 && issue.path.every((part, i) => part === one.path[i]));
    // A field already given is not what a stray key meant (`limit` and a leftover `limt`).
    const given = new Set(issue.input !== null && typeof issue.input === "object" ? Object.keys(issue.input) : []);
    const near = missing ? String(missing.path[missing.path.length - 1]) : nearestName(String(issue.keys[0]), objectKeysAt(schema, issue.path).filter((key) => !given.has(key)));
    if (near) message += ` (did you mean ${JSON.stringify(near)}?)`;
  } else if (issue.code === "invalid_type" && isMissing(value, issue.path)) {
    // A required field left out: say so, and what it takes (its description, or its rule's words),
    // never the validator's "expected nonoptional".
    const what = describedAt(schema, issue.path) ?? (message.startsWith("must be ") ? message.slice("must be ".length) : undefined);
    message = what ? `is required (${what})` : "is required";
  } else if (issue.code === "invalid_type" && (message.startsWith("Invalid input") || message === "Invalid input")) {
    // A schema without its own message: say it in Spillway's words, not the validator's.
    message = `must be ${EXPECTED[issue.expected] ?? issue.expected}, got ${describeValue(issue.input)}`;
  } else if ("input" in issue && !message.includes(", got ")) {
    message = `${message}, got ${describeValue(issue.input)}`;
  }
  throw new ValidationError(joinPath(prefix, path), message);
}

/**
 * The closest of `candidates` to a mistyped `name` (`route` → `routes`, `policy` → `policies`,
 * `ratelimit` → `rate_limit`, `limt` → `limit`), or undefined when none is close: at most two
 * edits, case, `_` and `-` aside; a singular for its plural counts as one.
 */
export function nearestName(name: string, candidates: Iterable<string>): string | undefined {
  const plain = (text: string) => text.toLowerCase().replace(/[_-]/g, "");
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of candidates) {
    const [one, other] = [plain(candidate), plain(name)];
    // A singular for a plural (`policy` for `policies`) is one slip, however many letters differ.
    const distance = one === other ? 0 : plural(one) === other || plural(other) === one ? 1 : editDistance(candidate.toLowerCase(), name.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

/** An English plural, as field names form it: `policy` → `policies`, `route` → `routes`. */
function plural(word: string): string {
  return /[^aeiou]y$/.test(word) ? `${word.slice(0, -1)}ies` : `${word}s`;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

/** Whether the field at `path` is absent from `value` (left out, not given as something wrong). */
function isMissing(value: unknown, path: readonly PropertyKey[]): boolean {
  if (path.length === 0) return value === undefined;
  let parent: unknown = value;
  for (const step of path.slice(0, -1)) {
    if (parent === null || typeof parent !== "object") return false;
    parent = (parent as Record<PropertyKey, unknown>)[step];
  }
  if (parent === null || typeof parent !== "object") return false;
  const last = path[path.length - 1]!;
  return !Object.hasOwn(parent, last) || (parent as Record<PropertyKey, unknown>)[last] === undefined;
}

/**
 * Names what a field takes, for "is required (…)": a schema that accepts anything (`z.unknown()`,
 * checked later by its own parser) says it with `described(schema, "a policy name, …")`.
 * @internal
 */
export function described<S extends zc.$ZodType>(schema: S, what: string): S {
  descriptions.set(schema, what);
  return schema;
}
const descriptions = new WeakMap<zc.$ZodType, string>();

/** The description of the field schema at `path` (an object's field, through wrappers), if one was given. */
function describedAt(schema: zc.$ZodType, path: readonly PropertyKey[]): string | undefined {
  let found: string | undefined;
  const walk = (node: { _zod: { def: SchemaDef } } | undefined, depth: number, seen: number): void => {
    if (!node || found !== undefined || seen > 40) return;
    const own = descriptions.get(node as unknown as zc.$ZodType);
    if (depth === path.length) {
      if (own !== undefined) found = own;
      else if (node._zod.def.innerType) walk(node._zod.def.innerType, depth, seen + 1);
      return;
    }
    const def = node._zod.def;
    const next = (child: { _zod: { def: SchemaDef } } | undefined, nextDepth = depth) => walk(child, nextDepth, seen + 1);
    if (def.innerType) return next(def.innerType);
    if (def.in) return next(def.in);
    if (def.options) return def.options.forEach((option) => next(option));
    const step = path[depth];
    if (def.type === "object" && def.shape && typeof step === "string") return next(def.shape[step], depth + 1);
    if (def.type === "array") return next(def.element, depth + 1);
    if (def.type === "record") return next(def.valueType, depth + 1);
  };
  walk(schema as unknown as { _zod: { def: SchemaDef } }, 0, 0);
  return found;
}

/** Zod's definition of a schema, as far as objectKeysAt walks it. */
interface SchemaDef {
  type: string;
  shape?: Record<string, { _zod: { def: SchemaDef } }>;
  innerType?: { _zod: { def: SchemaDef } };
  element?: { _zod: { def: SchemaDef } };
  valueType?: { _zod: { def: SchemaDef } };
  in?: { _zod: { def: SchemaDef } };
  options?: { _zod: { def: SchemaDef } }[];
  left?: { _zod: { def: SchemaDef } };
  right?: { _zod: { def: SchemaDef } };
}

/** The field names of the object schema at `path` (for "did you mean"), or none when the schema cannot be walked there. */
function objectKeysAt(schema: zc.$ZodType, path: readonly PropertyKey[]): string[] {
  const found = new Set<string>();
  const walk = (def: SchemaDef | undefined, depth: number, seen: number): void => {
    if (!def || seen > 40) return;
    const next = (child: { _zod: { def: SchemaDef } } | undefined, nextDepth = depth) => walk(child?._zod.def, nextDepth, seen + 1);
    if (def.innerType) return next(def.innerType);
    if (def.in) return next(def.in);
    if (def.options) return def.options.forEach((option) => next(option));
    if (def.left || def.right) return [def.left, def.right].forEach((side) => next(side));
    if (depth === path.length) {
      if (def.type === "object" && def.shape) for (const key of Object.keys(def.shape)) found.add(key);
      return;
    }
    const step = path[depth];
    if (def.type === "object" && def.shape && typeof step === "string") return next(def.shape[step], depth + 1);
    if (def.type === "array") return next(def.element, depth + 1);
    if (def.type === "record") return next(def.valueType, depth + 1);
  };
  walk((schema as unknown as { _zod: { def: SchemaDef } })._zod.def, 0, 0);
  return [...found];
}

const EXPECTED: Record<string, string> = { object: "a JSON object", array: "an array", string: "a string", number: "a number", boolean: "true or false" };

/**
 * An integer in [min, max], with a message that states the rule.
 * @internal
 */
export function integerIn(min: number, max: number, what = "an integer") {
  const rule = `must be ${what} from ${min} to ${max}`;
  return z.int({ error: rule }).check(z.minimum(min, { error: rule }), z.maximum(max, { error: rule }));
}

/** Renders a user's value for an error message without dumping huge inputs. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  const text = preview(value, 3);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * JSON-like text of a value, at most `depth` levels deep and a few items per level. Never
 * JSON.stringify a user's value whole: a body nested 10,000 levels deep overflows its stack,
 * and a 64 KiB one would be rendered only to keep 80 characters of it.
 */
function preview(value: unknown, depth: number): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 80 ? value.slice(0, 80) : value);
  if (value === null || typeof value !== "object") return String(value);
  if (depth === 0) return Array.isArray(value) ? "[...]" : "{...}";
  if (Array.isArray(value)) {
    const items = value.slice(0, 4).map((item) => preview(item, depth - 1));
    return `[${items.join(",")}${value.length > 4 ? ",..." : ""}]`;
  }
  const entries = Object.entries(value);
  const items = entries.slice(0, 4).map(([name, item]) => `${JSON.stringify(name)}:${preview(item, depth - 1)}`);
  return `{${items.join(",")}${entries.length > 4 ? ",..." : ""}}`;
}
