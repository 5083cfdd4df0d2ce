import type { Cluster, Redis } from "ioredis";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type ConformanceAdapter, clockedAdapter } from "./scenarios.js";

/**
 * A RedisStore on the client clock, set to each step's time. The expiry slack is large
 * because the injected clock runs far ahead of the real one: Redis must not expire a key
 * in real time that is still live in scenario time (the scripts drop fresh state by
 * themselves, exactly when the core does).
 */
export function redisAdapter(client: Redis | Cluster, keyPrefix: string): ConformanceAdapter & { store: RedisStore } {
  return clockedAdapter((clockMs) => new RedisStore({ client, keyPrefix, clock: "client", clockMs, clientExpirySlackMs: 600_000, timeoutMs: 2000 }));
}
