import { StoreUnavailableError } from "../core/limiter.js";
import { MAX_OVERRIDES_PER_POLICY, type Override, decodeOverride, overrideField } from "../overrides/parse.js";
import { KEPT_CHANGES, MAX_CHANGES_PER_READ, type OverrideChanges, type OverridePage, type OverrideTable, tooManyOverrides } from "../overrides/table.js";
import { withRetries } from "./durable-object.js";

/**
 * What the overrides Durable Object answers over RPC: the table declares the surface it
 * needs, the Worker's OverridesObject implements it (so stores/ never imports worker/).
 */
export interface OverridesObjectRpc extends Rpc.DurableObjectBranded {
  versions(policies: string[]): number[];
  /** null: the object no longer knows every change since (or more than `most`): read the policy whole. */
  changes(policy: string, sinceVersion: number, most: number): StoredChanges | null;
  page(policy: string, cursor: string | null, count: number): StoredPage;
  /** false: refused, the policy already holds `maxPerPolicy`. `field`: parse.ts overrideField. */
  put(override: Override, field: string, maxPerPolicy: number, keep: number): boolean;
  delete(policy: string, field: string, keep: number): boolean;
}

/** Changes as the object stores them: the JSON of each override put, the fields deleted. */
export interface StoredChanges {
  version: number;
  put: string[];
  deleted: string[];
}

/** A page as the object stores it: the JSON of each override; `cursor` null on the last; on a first page, the policy's version (absent from an object of an earlier release). */
export interface StoredPage {
  bodies: string[];
  cursor: string | null;
  version?: number;
}

/** The part of a Durable Object namespace binding the table uses: `env.OVERRIDES` fits it. */
export interface OverridesNamespace {
  getByName(name: string): DurableObjectStub<OverridesObjectRpc>;
}

/** Every isolate reads the one object of this name: overrides are few writes and rare reads (one per isolate per TTL). */
export const OVERRIDES_OBJECT_NAME = "overrides";

/**
 * Runtime overrides on the Worker: one Durable Object (OVERRIDES binding) holds every
 * policy's table, so every isolate applies what any isolate set. Isolates read it through
 * their `Overrides` cache, once per `overridesTtl`, never per request: versions, then only
 * the changes after the version each holds.
 */
export class DurableObjectOverrideTable implements OverrideTable {
  readonly #namespace: OverridesNamespace;
  /** An isolate's first read of 100,000 overrides: 10 calls to the one object, not 100. */
  readonly wholeReadPageSize = 10_000;
  /**
   * A policy's version lives in the object's `versions` table, bumped in the same synchronous
   * write as every row put or deleted since the first release (rows from before per-row
   * versions have row version 0, but their policy's version is above 0): a policy at 0 never
   * held an override. So an isolate's first read of a config without overrides is one call.
   */
  readonly versionZeroIsEmpty = true;
  /** A first page and its policy's version are read in one call of the single-threaded object. */
  readonly versionedPages = true;

  constructor(namespace: OverridesNamespace) {
    this.#namespace = namespace;
  }

  async #call<T>(run: (stub: DurableObjectStub<OverridesObjectRpc>) => Promise<T>): Promise<T> {
    try {
      return await withRetries(() => run(this.#namespace.getByName(OVERRIDES_OBJECT_NAME)));
    } catch (error) {
      throw new StoreUnavailableError(`overrides Durable Object call failed: ${(error as Error).message}`, { cause: error });
    }
  }

  versions(policies: readonly string[]): Promise<number[]> {
    return this.#call((stub) => stub.versions([...policies]));
  }

  async changes(policy: string, sinceVersion: number): Promise<OverrideChanges | undefined> {
    const stored = await this.#call((stub) => stub.changes(policy, sinceVersion, MAX_CHANGES_PER_READ));
    if (!stored) return undefined;
    return { version: stored.version, put: decodeAll(stored.put), deleted: stored.deleted };
  }

  async page(policy: string, cursor: string | undefined, count: number): Promise<OverridePage> {
    const stored = await this.#call((stub) => stub.page(policy, cursor ?? null, count));
    const page: OverridePage = stored.cursor === null ? { overrides: decodeAll(stored.bodies) } : { overrides: decodeAll(stored.bodies), cursor: stored.cursor };
    if (typeof stored.version === "number") page.version = stored.version;
    return page;
  }

  async put(override: Override): Promise<void> {
    if (!(await this.#call((stub) => stub.put(override, overrideField(override), MAX_OVERRIDES_PER_POLICY, KEPT_CHANGES)))) throw tooManyOverrides(override.policy);
  }

  delete(policy: string, source: string | undefined, key: string): Promise<boolean> {
    return this.#call((stub) => stub.delete(policy, overrideField({ source, key }), KEPT_CHANGES));
  }
}

/** Rows that do not decode (none this code writes) are left out rather than failing a read. */
function decodeAll(bodies: readonly string[]): Override[] {
  const overrides: Override[] = [];
  for (const body of bodies) {
    const override = decodeOverride(body);
    if (override) overrides.push(override);
  }
  return overrides;
}
