import type { RedisClient } from "./scripts.js";
import { withTimeout } from "./errors.js";
import { MAX_OVERRIDES_PER_POLICY, type Override } from "../../overrides/parse.js";
import { type OverrideTable, tooManyOverrides } from "../../overrides/table.js";

/**
 * Runtime overrides in Redis: one hash per policy, field = key, value = the override as JSON,
 * and a version counter beside it, both under the hash tag `{overrides:<policy>}` (one Cluster
 * slot per policy):
 *
 *   <prefix>{overrides:<policy>}:~overrides   hash of the policy's overrides
 *   <prefix>{overrides:<policy>}:~version     incremented by every change
 *
 * `~` never starts a policy name, so these never meet a user key's state (keys.ts's layout).
 */

/**
 * KEYS: the hash, the version. ARGV: field, value, the most fields allowed.
 * Adds or replaces one field unless that would pass the most; answers 1, or 0 when refused.
 */
const PUT = `
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 and redis.call("HLEN", KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
redis.call("INCR", KEYS[2])
return 1`;

/** KEYS: the hash, the version. ARGV: field. Answers 1 when the field was there. */
const DELETE = `
if redis.call("HDEL", KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call("INCR", KEYS[2])
return 1`;

/** Reading a whole table (up to 100,000 overrides) takes longer than a decision's 50 ms. */
const TIMEOUT_MS = 2000;

export class RedisOverrideTable implements OverrideTable {
  readonly #client: RedisClient;
  readonly #prefix: string;

  constructor(client: RedisClient, keyPrefix: string) {
    this.#client = client;
    this.#prefix = keyPrefix;
  }

  #keys(policy: string): [string, string] {
    const base = `${this.#prefix}{overrides:${policy}}:`;
    return [`${base}~overrides`, `${base}~version`];
  }

  async versions(policies: readonly string[]): Promise<string[]> {
    // One GET per policy: each is in its own slot on a Cluster.
    const read = Promise.all(policies.map((policy) => this.#client.get(this.#keys(policy)[1])));
    return (await withTimeout(read, TIMEOUT_MS, "overrides versions")).map((version) => version ?? "0");
  }

  async load(policy: string): Promise<Override[]> {
    const [table] = this.#keys(policy);
    const fields = await withTimeout(this.#client.hgetall(table), TIMEOUT_MS, "overrides load");
    const nowMs = Date.now();
    const overrides = Object.values(fields).map((text) => JSON.parse(text) as Override);
    // Expired overrides apply nowhere: drop them, so they do not count towards the most a policy holds.
    const expired = overrides.filter((one) => one.expiresAtMs !== undefined && one.expiresAtMs <= nowMs).map((one) => one.key);
    if (expired.length > 0) this.#client.hdel(table, ...expired).catch(() => {});
    return overrides;
  }

  async put(override: Override): Promise<void> {
    const [table, version] = this.#keys(override.policy);
    const added = await withTimeout(this.#client.eval(PUT, 2, table, version, override.key, JSON.stringify(override), MAX_OVERRIDES_PER_POLICY), TIMEOUT_MS, "overrides put");
    if (added === 0) throw tooManyOverrides(override.policy);
  }

  async delete(policy: string, key: string): Promise<boolean> {
    const [table, version] = this.#keys(policy);
    return (await withTimeout(this.#client.eval(DELETE, 2, table, version, key), TIMEOUT_MS, "overrides delete")) === 1;
  }
}
