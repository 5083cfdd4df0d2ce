import * as z from "zod/mini";
import { type PolicyCatalog, UnknownPolicyError } from "../core/policy.js";
import { ValidationError, describeValue, parseWith } from "../core/validation.js";
import type { Overrides } from "./overrides.js";
import { parseKeySource, sourceName } from "./key-source.js";
import { type OverrideView, overrideView, parseOverride } from "./parse.js";
import { OVERRIDES_PAGE_SIZE, type OverrideTable } from "./table.js";
import { type RouteSources, checkSourcedKey } from "./route-sources.js";

export type { OverrideView } from "./parse.js";

const deleteBody = z.strictObject({
  policy: z.string({ error: "must be a policy name from the config" }),
  key: z.string({ error: "must be the override's key" }),
  source: z.optional(z.union([z.string(), z.array(z.string())], { error: 'must be the override\'s key source, like "ip" or "header:x-api-key"' })),
});
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
  readonly #routeSources: RouteSources;

  /** `routeSources`: what the config's routes read (route-sources.ts), which a `source` must name. */
  constructor(overrides: Overrides, catalog: PolicyCatalog, routeSources: RouteSources = new Map()) {
    this.#overrides = overrides;
    this.#catalog = catalog;
    this.#routeSources = routeSources;
  }

  #table(): OverrideTable {
    const table = this.#overrides.table;
    if (!table) throw new NoOverrideTableError();
    return table;
  }

  #policy(name: string, field: string): void {
    if (!this.#catalog.has(name)) throw new UnknownPolicyError(field, name, this.#catalog.keys());
  }

  /** PUT /v1/overrides: adds or replaces (policy, source, key); answers the override as stored. */
  async put(body: unknown): Promise<OverrideView & { warning?: string }> {
    const override = parseOverride(object(body), this.#catalog, "");
    // A sourced override no route can ever apply is refused (a source no route of the policy reads), or warned of.
    const written = (body as { source?: string | string[] }).source;
    const source = written === undefined ? undefined : parseKeySource(written);
    // Without a source it is for /v1 keys, which may use any policy: nothing to check.
    const warning = source === undefined || typeof source === "string" ? undefined : checkSourcedKey(this.#routeSources, override.policy, source, override.key, "override");
    // The answer is made before the write: nothing is stored that cannot be shown.
    const view: OverrideView & { warning?: string } = overrideView(override);
    if (warning) view.warning = warning;
    await this.#table().put(override);
    this.#overrides.invalidate();
    return view;
  }

  /** DELETE /v1/overrides `{ policy, key, source? }`: answers whether there was one. */
  async delete(body: unknown): Promise<{ deleted: boolean }> {
    const { policy, key, source } = parseWith(deleteBody, object(body), "");
    this.#policy(policy, "policy");
    let name: string | undefined;
    if (source !== undefined) {
      const parsed = parseKeySource(source);
      if (typeof parsed === "string") throw new ValidationError("source", parsed);
      name = sourceName(parsed);
    }
    const deleted = await this.#table().delete(policy, name, key);
    this.#overrides.invalidate();
    return { deleted };
  }

  /**
   * GET /v1/overrides?policy=NAME[&cursor=…]: the runtime overrides of one policy, a page of
   * about 1,000 at a time (each page one short read of the store, whatever the table's size).
   */
  async list(query: Record<string, string | undefined>): Promise<{ overrides: OverrideView[]; cursor?: string }> {
    const { policy, cursor } = parseWith(listQuery, query, "");
    if (policy === undefined) throw new ValidationError("policy", "is required: the name of a policy from the config (?policy=NAME)");
    this.#policy(policy, "policy");
    const page = await this.#table().page(policy, cursor === undefined ? undefined : decodeCursor(cursor), OVERRIDES_PAGE_SIZE);
    const nowMs = Date.now();
    const live = page.overrides.filter((one) => one.expiresAtMs === undefined || one.expiresAtMs > nowMs);
    return { overrides: live.map(overrideView), ...(page.cursor !== undefined ? { cursor: encodeCursor(page.cursor) } : {}) };
  }
}

const encoder = new TextEncoder();

/** A table's cursor as the API answers it: base64url of its UTF-8, opaque to the caller. */
function encodeCursor(cursor: string): string {
  let binary = "";
  for (const byte of encoder.encode(cursor)) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function decodeCursor(cursor: string): string {
  try {
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)));
  } catch {
    throw new ValidationError("cursor", "must be the cursor of a previous page, as it was answered");
  }
}
