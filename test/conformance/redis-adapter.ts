import type { Cluster, Redis } from "ioredis";
import { RedisStore } from "../../src/stores/redis.js";
import type { ConformanceAdapter } from "./scenarios.js";

/**
 * Drives a RedisStore with the client clock set to each step's time. The expiry slack is
 * large because the injected clock runs far ahead of the real one: Redis must not expire
 * a key in real time that is still live in scenario time (the scripts drop fresh state
 * by themselves, exactly when the core does).
 */
export function redisAdapter(client: Redis | Cluster, keyPrefix: string): ConformanceAdapter & { store: RedisStore } {
  let nowMs = 0;
  const store = new RedisStore({ client, keyPrefix, clock: "client", clockMs: () => nowMs, clientExpirySlackMs: 600_000, timeoutMs: 2000 });
  const at = <T>(timeMs: number, call: () => Promise<T>) => {
    nowMs = timeMs;
    return call();
  };
  return {
    store,
    check: (key, policies, options, timeMs) => at(timeMs, () => store.check(key, policies, options)),
    peek: (key, policies, timeMs) => at(timeMs, () => store.peek(key, policies)),
    reset: (key, policies, timeMs) => at(timeMs, () => store.reset(key, policies)),
    acquire: (key, policies, options, timeMs) => at(timeMs, () => store.acquire(key, policies, options)),
    release: (key, policies, leaseId, timeMs) => at(timeMs, () => store.release(key, policies, leaseId)),
    extend: (key, policies, leaseId, leaseMs, timeMs) => at(timeMs, () => store.extend(key, policies, leaseId, leaseMs)),
  };
}
