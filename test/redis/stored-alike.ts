import type { Redis } from "ioredis";
import { expect } from "vitest";
import type { Policy } from "../../src/core/types.js";
import { decodeStoredState } from "../../src/stores/redis/codec.js";
import { keyLayout } from "../../src/stores/redis/keys.js";
import type { coreAdapter } from "../conformance/scenarios.js";

/**
 * A differential test's second half: what Redis stores for each key and policy is what the
 * core holds after the same trace (a state Redis never wrote is the core's absent one).
 * `labelOf` names a policy in the failure message (default: its name).
 */
export async function expectStoredAlike(
  client: Redis,
  prefix: string,
  core: ReturnType<typeof coreAdapter>,
  keys: readonly string[],
  policies: readonly Pick<Policy, "name">[],
  labelOf: (index: number, name: string) => string = (_index, name) => name,
): Promise<void> {
  for (const key of keys) {
    for (const [index, policy] of policies.entries()) {
      const raw = await client.get(keyLayout(prefix, key).stateKey(policy.name));
      const stored = core.stateOf(key).states.get(policy.name);
      expect(JSON.parse(JSON.stringify(raw === null ? null : decodeStoredState(raw))), `${key}/${labelOf(index, policy.name)}`).toEqual(JSON.parse(JSON.stringify(stored ?? null)));
    }
  }
}
