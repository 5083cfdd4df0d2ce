// A redis-server of the file's own (on a free port) and a RedisStore on it, ready, for tests that
// drive a gateway over Redis; stop() closes both.
import { Redis } from "ioredis";
import { REDIS_CLIENT_OPTIONS, RedisStore } from "../../src/stores/redis/store.js";
import { startRedis } from "../../scripts/redis-server.js";

export interface OwnRedisStore {
  store: RedisStore;
  stop(): Promise<void>;
}

export async function startOwnRedisStore(): Promise<OwnRedisStore> {
  const redis = await startRedis();
  const client = new Redis(redis.url, REDIS_CLIENT_OPTIONS);
  const store = new RedisStore({ client, log: () => {} });
  if (!(await store.ready(10_000))) throw new Error(`the RedisStore on ${redis.url} was not ready within 10 s`);
  return {
    store,
    async stop() {
      await store.close();
      client.disconnect();
      await redis.stop();
    },
  };
}
