import type { Cluster } from "ioredis";
import type { RedisClient } from "./scripts.js";

/** ioredis states of a connection attempt under way ("wait" is lazyConnect's: nothing is under way). */
export const CONNECTING: ReadonlySet<string> = new Set(["connecting", "connect"]);

/** Resolves when the client is ready, its attempt failed (close/end), or after `timeoutMs`. */
export function settledConnection(client: RedisClient, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const settle = () => {
      clearTimeout(timer);
      for (const event of ["ready", "close", "end"]) client.off(event, settle);
      resolve();
    };
    const timer = setTimeout(settle, timeoutMs);
    for (const event of ["ready", "close", "end"]) client.once(event, settle);
  });
}

/** Whether the client is an ioredis Cluster (a plain Redis client has no isCluster flag). */
export function isCluster(client: RedisClient): client is Cluster {
  return "isCluster" in client && client.isCluster === true;
}
