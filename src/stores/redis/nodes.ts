import type { Cluster, Redis } from "ioredis";
import { StoreUnavailableError } from "../../core/limiter.js";
import { isCluster } from "./connection.js";
import type { RedisClient } from "./scripts.js";

/*
 * Keys that must live on one particular server: the data-loss marker and the health probe of
 * each Cluster master (of the one server, standalone). They sit beside the state keys under
 * the prefix, in a hash tag no user key's layout produces alone: `<prefix>{~epoch}` has nothing
 * after its tag, and state keys always have `:<policy>`, whose name cannot start with `~`.
 */

const SLOTS = 16384;

/** The servers to check: every Cluster master by its address, or the one server. */
export function serverNodes(client: RedisClient): [string, Redis][] {
  if (!isCluster(client)) return [["server", client as Redis]];
  return client.nodes("master").map((node) => [`${node.options.host}:${node.options.port}`, node]);
}

const tagCache = new WeakMap<Cluster, Map<string, string>>();

/**
 * The marker key of one server: standalone, `<prefix>{~epoch}`; on a Cluster, a tag
 * `~epoch-N` whose slot this master serves now (found by trying N = 0, 1, …: about as many
 * tries as there are masters), re-chosen when the slot moves.
 */
export function markerKeyFor(client: RedisClient, keyPrefix: string, nodeKey: string): string {
  if (!isCluster(client)) return `${keyPrefix}{~epoch}`;
  let tags = tagCache.get(client);
  if (!tags) tagCache.set(client, (tags = new Map()));
  const owner = (tag: string) => client.slots[hashSlot(tag)]?.[0];
  let tag = tags.get(nodeKey);
  if (tag === undefined || owner(tag) !== nodeKey) {
    tag = undefined;
    // Before the slot table is known (or for a node that serves none), there is no such key.
    if (!client.slots.some((owners) => owners?.[0] === nodeKey)) throw new StoreUnavailableError(`redis data check: ${nodeKey} serves no slot yet`);
    for (let n = 0; tag === undefined; n++) if (owner(`~epoch-${n}`) === nodeKey) tag = `~epoch-${n}`;
    tags.set(nodeKey, tag);
  }
  return `${keyPrefix}{${tag}}`;
}

/**
 * A write to every server, for health: PING answers on a server that refuses every write
 * (out of memory under noeviction, a read-only replica), where each decision fails. SET is
 * refused there as a decision's script is, and by a server that wants AUTH.
 */
export async function probeWrites(client: RedisClient, keyPrefix: string): Promise<void> {
  await Promise.all(serverNodes(client).map(([nodeKey, node]) => node.set(`${markerKeyFor(client, keyPrefix, nodeKey)}:~health`, "1", "PX", 60_000)));
}

/** CRC16 (XMODEM) of a key's hash tag, mod 16384: the Cluster slot (Redis Cluster spec). */
export function hashSlot(key: string): number {
  const open = key.indexOf("{");
  if (open !== -1) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  // ASCII (every key hashed here but in tests) needs no encoder.
  const bytes = /^[\x00-\x7f]*$/.test(key) ? Array.from(key, (char) => char.charCodeAt(0)) : new TextEncoder().encode(key);
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % SLOTS;
}
