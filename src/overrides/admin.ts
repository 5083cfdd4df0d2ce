import * as z from "zod/mini";
import { type PolicyCatalog, UnknownPolicyError } from "../core/policy.js";
import { ValidationError, describeValue, parseWith } from "../core/validation.js";
import type { Overrides } from "./overrides.js";
import { type OverrideView, overrideView, parseOverride } from "./parse.js";
import { type OverrideTable, overridesPage } from "./table.js";

export type { OverrideView } from "./parse.js";

const deleteBody = z.strictObject({ policy: z.string({ error: "must be a policy name from the config" }), key: z.string({ error: "must be the override's key" }) });
const listQuery = z.strictObject({ policy: z.optional(z.string()), cursor: z.optional(z.string()) });

function object(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw new ValidationError("body", `must be a JSON object, got ${describeValue(body)}`);
  return body as Record<string, unknown>;
}

/**
 * This deployment has nowhere to keep runtime overrides (a Worker without the OVERRIDES
 * binding): a 503 that says how to add it. Not a store failure: nothing is down, and nothing
 * is logged for it.
 */
export class NoOverrideTableError extends Error {
  constructor() {
    super("runtime overrides need a store that holds them (the memory store, Redis, or on a Worker the OVERRIDES Durable Object binding: see docs/overrides.md); config overrides still apply");
    this.name = "NoOverrideTableError";
  }
}

/**
 * Runtime overrides, as the API and RPC change them (`PUT`, `GET`, `DELETE /v1/overrides`):
 * validated against the config's policies, written to the store's table. A change is applied
 * by this process at once and by every other within `overridesTtl`.
 */
export class OverrideAdmin {
  readonly #overrides: Overrides;
  readonly #catalog: PolicyCatalog;

  constructor(overrides: Overrides, catalog: PolicyCatalog) {
    this.#overrides = overrides;
    this.#catalog = catalog;
  }

  #table(): OverrideTable {
    const table = this.#overrides.table;
    if (!table) throw new NoOverrideTableError();
    return table;
  }

  #policy(name: string, field: string): void {
    if (!this.#catalog.has(name)) throw new UnknownPolicyError(field, name);
  }

  /** PUT /v1/overrides: adds or replaces (policy, key); answers the override as stored. */
  async put(body: unknown): Promise<OverrideView> {
    const override = parseOverride(object(body), this.#catalog, "");
    await this.#table().put(override);
    this.#overrides.invalidate();
    return overrideView(override);
  }

  /** DELETE /v1/overrides `{ policy, key }`: answers whether there was one. */
  async delete(body: unknown): Promise<{ deleted: boolean }> {
    const { policy, key } = parseWith(deleteBody, object(body), "");
    this.#policy(policy, "policy");
    const deleted = await this.#table().delete(policy, key);
    this.#overrides.invalidate();
    return { deleted };
  }

  /** GET /v1/overrides?policy=NAME[&cursor=…]: the runtime overrides of one policy, 1,000 a page in key order. */
  async list(query: Record<string, string | undefined>): Promise<{ overrides: OverrideView[]; cursor?: string }> {
    const { policy, cursor } = parseWith(listQuery, query, "");
    if (policy === undefined) throw new ValidationError("policy", "is required: the name of a policy from the config (?policy=NAME)");
    this.#policy(policy, "policy");
    const page = overridesPage(await this.#table().load(policy), cursor, Date.now());
    return { overrides: page.overrides.map(overrideView), ...(page.cursor ? { cursor: page.cursor } : {}) };
  }
}
