import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { DurableObjectStore, type KeyLimiterNamespace } from "../../src/stores/durable-object.js";

const oneSlot = parsePolicy({ name: "one-slot", algorithm: "concurrency", limit: 1, lease: "1m" }, "policy");
const now = { maxWaitMs: 0 };
const flagged = (flags: { retryable?: boolean; overloaded?: boolean }) => Object.assign(new Error("Durable Object reset because its code was updated"), flags);

/**
 * The real LIMITER namespace, whose release calls fail `failures` times first with `error`
 * (what the runtime throws when an object resets or is overloaded), then reach the object.
 */
function failingReleases(failures: number, error: () => Error): { namespace: KeyLimiterNamespace; releaseCalls: () => number } {
  let calls = 0;
  const namespace: KeyLimiterNamespace = {
    getByName(name) {
      const stub = env.LIMITER.getByName(name);
      return new Proxy(stub, {
        get(target, property) {
          if (property !== "release") return Reflect.get(target, property);
          return (...args: Parameters<typeof stub.release>) => {
            if (++calls <= failures) return Promise.reject(error());
            return target.release(...args);
          };
        },
      });
    },
  };
  return { namespace, releaseCalls: () => calls };
}

describe("a Durable Object release is retried until the slot is free", () => {
  for (const [what, error] of [
    ["five transient resets", () => flagged({ retryable: true })],
    ["five overloaded answers", () => flagged({ retryable: true, overloaded: true })],
  ] as const) {
    it(`${what}: the release lands and the slot is free for the next caller`, async () => {
      const key = `release-retry-${what}`;
      const store = new DurableObjectStore(env.LIMITER);
      const held = await store.acquire(key, [oneSlot], now);
      expect(held.acquired).toBe(true);
      expect((await store.acquire(key, [oneSlot], now)).acquired).toBe(false);

      const { namespace, releaseCalls } = failingReleases(5, error);
      const released = await new DurableObjectStore(namespace).release(key, [oneSlot], held.acquired ? held.leaseId : "");
      expect(released.released).toBe(true);
      expect(releaseCalls()).toBe(6);
      expect((await store.acquire(key, [oneSlot], now)).acquired).toBe(true);
    });
  }

  it("an error that is not transient is not retried: it fails at once as store unavailable", async () => {
    const { namespace, releaseCalls } = failingReleases(1, () => new Error("no such method"));
    const error = await new DurableObjectStore(namespace).release("release-retry-fatal", [oneSlot], "lease").catch((thrown: unknown) => thrown);
    expect((error as Error).name).toBe("StoreUnavailableError");
    expect(releaseCalls()).toBe(1);
  });
});
