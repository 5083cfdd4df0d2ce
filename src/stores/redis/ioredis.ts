import { createRequire } from "node:module";
import type * as IORedis from "ioredis";

/**
 * ioredis, loaded on first use. It is an optional peer dependency (it brings seven packages
 * of its own, more than the rest of the library together): `spillway/redis` imports without
 * it, and a RedisStore that must make its own client says to install it. ioredis is CommonJS,
 * so require() loads it synchronously, in the constructor that needs it.
 */
let loaded: typeof IORedis | undefined;

export function ioredis(): typeof IORedis {
  if (loaded) return loaded;
  try {
    loaded = createRequire(import.meta.url)("ioredis") as typeof IORedis;
  } catch (error) {
    const { code } = error as { code?: string };
    if (code === "MODULE_NOT_FOUND" && /'ioredis'/.test((error as Error).message)) {
      throw new Error("RedisStore needs the ioredis package, which is not installed: npm install ioredis");
    }
    throw error;
  }
  return loaded;
}
