import type { RedisClient } from "./scripts.js";
import { withTimeout } from "./errors.js";
import { ValidationError } from "../../core/validation.js";
import { MAX_OVERRIDES_PER_POLICY, type Override, decodeOverride, overrideField } from "../../overrides/parse.js";
import { KEPT_CHANGES, MAX_CHANGES_PER_READ, type OverrideChanges, type OverridePage, type OverrideTable, tooManyOverrides } from "../../overrides/table.js";

/**
 * Runtime overrides in Redis: one hash per policy, field = parse.ts overrideField (the key, for
 * an override without a source), value = the override as JSON; a version counter and a change
 * log beside it, all under the hash tag `{overrides:<policy>}` (one Cluster slot per policy):
 *
 *   <prefix>{overrides:<policy>}:~overrides   hash of the policy's overrides
 *   <prefix>{overrides:<policy>}:~version     incremented by every change
 *   <prefix>{overrides:<policy>}:~changes     sorted set: each changed field, scored by the version of its last change
 *   <prefix>{overrides:<policy>}:~log         hash: `logged` (the version of the last change logged),
 *                                             `trimmed` (changes at or below it are no longer in ~changes)
 *
 * A reader that holds version v asks for the fields scored above v and reads just those
 * (CHANGES): work in proportion to the change. The log keeps the latest KEPT_CHANGES fields;
 * a reader further behind reads the hash whole (HSCAN pages). A change made without the log (a
 * process of an older release, which knew only ~overrides and ~version) leaves `logged` behind
 * `~version`: readers then read the table whole, and the next logged change marks everything
 * before it as trimmed, so nothing is ever missed.
 *
 * `~` never starts a policy name, so these never meet a user key's state (keys.ts's layout).
 */

/** Logs one change (KEYS 2 to 4: version, changes, log; `keep`: the most changes kept). Shared by PUT and DELETE. */
const LOG_CHANGE = `
local function logChange(field, keep)
  local before = tonumber(redis.call("GET", KEYS[2]) or "0")
  local logged = tonumber(redis.call("HGET", KEYS[4], "logged") or "0")
  local version = redis.call("INCR", KEYS[2])
  if logged ~= before then redis.call("HSET", KEYS[4], "trimmed", before) end
  redis.call("ZADD", KEYS[3], version, field)
  redis.call("HSET", KEYS[4], "logged", version)
  local size = redis.call("ZCARD", KEYS[3])
  if size > keep + keep / 4 then
    local cut = size - keep
    local last = redis.call("ZRANGE", KEYS[3], cut - 1, cut - 1, "WITHSCORES")
    redis.call("ZREMRANGEBYRANK", KEYS[3], 0, cut - 1)
    redis.call("HSET", KEYS[4], "trimmed", last[2])
  end
end`;

/**
 * KEYS: the hash, the version, the changes, the log. ARGV: field, value, the most fields
 * allowed, the most changes kept. Adds or replaces one field unless that would pass the most;
 * answers 1, or 0 when refused.
 */
const PUT = `${LOG_CHANGE}
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 and redis.call("HLEN", KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
logChange(ARGV[1], tonumber(ARGV[4]))
return 1`;

/** KEYS: as PUT. ARGV: field, the most changes kept. Answers 1 when the field was there. */
const DELETE = `${LOG_CHANGE}
if redis.call("HDEL", KEYS[1], ARGV[1]) == 0 then return 0 end
logChange(ARGV[1], tonumber(ARGV[2]))
return 1`;

/**
 * KEYS: as PUT. ARGV: the version the reader holds, the most changes answered.
 * Answers { version, fields, values } (a value false: the field was deleted), or nil when the
 * log cannot say what changed since (trimmed past it, a change it never saw, the table
 * recreated below it, or more than the most): the reader reads the table whole.
 */
const CHANGES = `
local version = tonumber(redis.call("GET", KEYS[2]) or "0")
local since = tonumber(ARGV[1])
if since > version then return nil end
if since == version then return { version, {}, {} } end
local logged = tonumber(redis.call("HGET", KEYS[4], "logged") or "0")
local trimmed = tonumber(redis.call("HGET", KEYS[4], "trimmed") or "0")
if logged ~= version or since < trimmed then return nil end
local most = tonumber(ARGV[2])
local fields = redis.call("ZRANGEBYSCORE", KEYS[3], "(" .. since, "+inf", "LIMIT", 0, most + 1)
if #fields > most then return nil end
if #fields == 0 then return nil end
return { version, fields, redis.call("HMGET", KEYS[1], unpack(fields)) }`;

/**
 * KEYS: the version, the hash. The policy's version; when none is kept, 0 only if the hash
 * holds nothing either (the policy never held an override: a first read stops here), else -1
 * (an evicted or deleted `~version` beside overrides: never taken for empty, read whole).
 */
const VERSION = `
local version = redis.call("GET", KEYS[1])
if version then return tonumber(version) end
if redis.call("EXISTS", KEYS[2]) == 1 then return -1 end
return 0`;

/**
 * KEYS: the hash, the version. ARGV: the count asked of HSCAN. A first page and the version it
 * was read at, in one step: { version, cursor, fields and values }.
 */
const FIRST_PAGE = `
local page = redis.call("HSCAN", KEYS[1], "0", "COUNT", ARGV[1])
return { tonumber(redis.call("GET", KEYS[2]) or "0"), page[1], page[2] }`;

/** A whole table read as HGETALL once took longer than a decision's 50 ms; a page or a change is short. */
const TIMEOUT_MS = 2000;

export class RedisOverrideTable implements OverrideTable {
  /** versions() answers 0 only for a policy without a version and without overrides (VERSION). */
  readonly versionZeroIsEmpty = true;
  /** A first page comes with its version (FIRST_PAGE): a policy that fits in it is one call. */
  readonly versionedPages = true;
  readonly #client: RedisClient;
  readonly #prefix: string;

  constructor(client: RedisClient, keyPrefix: string) {
    this.#client = client;
    this.#prefix = keyPrefix;
  }

  /** The hash, the version, the changes, the log. */
  #keys(policy: string): [string, string, string, string] {
    const base = `${this.#prefix}{overrides:${policy}}:`;
    return [`${base}~overrides`, `${base}~version`, `${base}~changes`, `${base}~log`];
  }

  async versions(policies: readonly string[]): Promise<number[]> {
    // One call per policy (each is in its own slot on a Cluster), sent together.
    const read = Promise.all(
      policies.map((policy) => {
        const [table, version] = this.#keys(policy);
        return this.#client.eval(VERSION, 2, version, table) as Promise<number>;
      }),
    );
    return (await withTimeout(read, TIMEOUT_MS, "overrides versions")).map(Number);
  }

  async changes(policy: string, sinceVersion: number): Promise<OverrideChanges | undefined> {
    const answer = (await withTimeout(this.#client.eval(CHANGES, 4, ...this.#keys(policy), sinceVersion, MAX_CHANGES_PER_READ), TIMEOUT_MS, "overrides changes")) as [number, string[], (string | null)[]] | null;
    if (!answer) return undefined;
    const [version, fields, values] = answer;
    const put: Override[] = [];
    const deleted: string[] = [];
    fields.forEach((field, i) => {
      const override = values[i] === null ? undefined : decodeOverride(values[i]!);
      if (override) put.push(override);
      else deleted.push(field);
    });
    return { version: Number(version), put, deleted };
  }

  /** HSCAN pages: each one short, whatever the table's size; the cursor is Redis's. */
  async page(policy: string, cursor: string | undefined, count: number): Promise<OverridePage> {
    if (cursor !== undefined && !/^\d{1,20}$/.test(cursor)) throw new ValidationError("cursor", "must be the cursor of a previous page, as it was answered");
    const [table, versionKey] = this.#keys(policy);
    let version: number | undefined;
    let next: string;
    let flat: string[];
    if (cursor === undefined) {
      [version, next, flat] = (await withTimeout(this.#client.eval(FIRST_PAGE, 2, table, versionKey, count), TIMEOUT_MS, "overrides page")) as [number, string, string[]];
    } else {
      [next, flat] = await withTimeout(this.#client.hscan(table, cursor, "COUNT", count), TIMEOUT_MS, "overrides page");
    }
    const nowMs = Date.now();
    const overrides: Override[] = [];
    const expired: string[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const override = decodeOverride(flat[i + 1]!);
      if (!override) continue;
      overrides.push(override);
      if (override.expiresAtMs !== undefined && override.expiresAtMs <= nowMs) expired.push(flat[i]!);
    }
    // Expired overrides apply nowhere: drop them, so they do not count towards the most a policy holds.
    if (expired.length > 0) this.#client.hdel(table, ...expired).catch(() => {});
    const page: OverridePage = next === "0" ? { overrides } : { overrides, cursor: next };
    if (version !== undefined) page.version = Number(version);
    return page;
  }

  async put(override: Override): Promise<void> {
    const added = await withTimeout(this.#client.eval(PUT, 4, ...this.#keys(override.policy), overrideField(override), JSON.stringify(override), MAX_OVERRIDES_PER_POLICY, KEPT_CHANGES), TIMEOUT_MS, "overrides put");
    if (added === 0) throw tooManyOverrides(override.policy);
  }

  async delete(policy: string, source: string | undefined, key: string): Promise<boolean> {
    return (await withTimeout(this.#client.eval(DELETE, 4, ...this.#keys(policy), overrideField({ source, key }), KEPT_CHANGES), TIMEOUT_MS, "overrides delete")) === 1;
  }
}
