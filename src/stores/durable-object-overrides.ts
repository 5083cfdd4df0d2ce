import { StoreUnavailableError } from "../limiter.js";
import { MAX_OVERRIDES_PER_POLICY, type Override } from "../overrides/parse.js";
import { type OverrideTable, tooManyOverrides } from "../overrides/table.js";
import { withRetries } from "./durable-object.js";

/**
 * What the overrides Durable Object answers over RPC: the table declares the surface it
 * needs, the Worker's OverridesObject implements it (so stores/ never imports worker/).
 */
export interface OverridesObjectRpc extends Rpc.DurableObjectBranded {
  versions(policies: string[]): string[];
  load(policy: string): Override[];
  /** false: refused, the policy already holds `maxPerPolicy`. */
  put(override: Override, maxPerPolicy: number): boolean;
  delete(policy: string, key: string): boolean;
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
 * their `Overrides` cache, once per `overridesTtl`, never per request.
 */
export class DurableObjectOverrideTable implements OverrideTable {
  readonly #namespace: OverridesNamespace;

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

  versions(policies: readonly string[]): Promise<string[]> {
    return this.#call((stub) => stub.versions([...policies]));
  }

  load(policy: string): Promise<Override[]> {
    return this.#call((stub) => stub.load(policy) as Promise<Override[]>);
  }

  async put(override: Override): Promise<void> {
    if (!(await this.#call((stub) => stub.put(override, MAX_OVERRIDES_PER_POLICY)))) throw tooManyOverrides(override.policy);
  }

  delete(policy: string, key: string): Promise<boolean> {
    return this.#call((stub) => stub.delete(policy, key));
  }
}
