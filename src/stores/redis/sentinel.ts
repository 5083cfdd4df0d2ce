/**
 * Redis Sentinel: a master with replicas, whose address the sentinels give and change on a
 * failover. ioredis follows it: it asks a sentinel for the master on every connect and checks
 * that what answers is a master. A dead master drops the connection; a demoted one has its
 * clients killed by Sentinel (CLIENT KILL after the switch), so the reconnect finds the new one
 * without ioredis's failoverDetector (whose extra sentinel connections have no error listener:
 * a sentinel going down would print "Unhandled error event"). What this file adds is the
 * checking of the options and messages that say which sentinel said what, where ioredis says
 * "All sentinels are unreachable" even when every sentinel answered but knows no master of
 * that name.
 */
import type { ConnectionOptions } from "node:tls";
import { Redis, type RedisOptions } from "ioredis";

/** One sentinel's address (Sentinel's default port is 26379; Spillway asks for it). */
export interface SentinelAddress {
  host: string;
  port: number;
}

/** The Sentinel shape of RedisStoreOptions (see options.ts). */
export interface SentinelStoreOptions {
  sentinels: readonly SentinelAddress[];
  name: string;
  sentinelUsername?: string;
  sentinelPassword?: string;
  username?: string;
  password?: string;
  tls?: boolean | ConnectionOptions;
  sentinelTls?: boolean | ConnectionOptions;
  db?: number;
}

/** Fields that only mean something with `sentinels` (a URL carries its own password, TLS and db). */
export const SENTINEL_ONLY_FIELDS = ["name", "sentinelUsername", "sentinelPassword", "username", "password", "tls", "sentinelTls", "db"] as const;

/**
 * `sentinels` checked: a non-empty list of `{ host, port }`, each port an integer 1 … 65535,
 * no address twice. Throws a TypeError naming `field` and the entry.
 */
export function validateSentinels(value: unknown, field: string): SentinelAddress[] {
  if (!Array.isArray(value) || value.length === 0) throw new TypeError(`${field} must list at least one sentinel as { host, port }, got ${JSON.stringify(value) ?? String(value)}`);
  const seen = new Set<string>();
  return value.map((entry: unknown, index) => {
    const { host, port } = (entry ?? {}) as { host?: unknown; port?: unknown };
    if (typeof host !== "string" || host === "") throw new TypeError(`${field}.${index}.host must be a host name or address, got ${JSON.stringify(host) ?? String(host)}`);
    if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) throw new TypeError(`${field}.${index}.port must be an integer from 1 to 65535, got ${JSON.stringify(port) ?? String(port)}`);
    const address = formatAddress({ host, port });
    if (seen.has(address)) throw new TypeError(`${field}.${index}: ${address} is listed twice`);
    seen.add(address);
    return { host, port };
  });
}

/** `host:port`, `[::1]:26379` for IPv6. */
export function formatAddress({ host, port }: SentinelAddress): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Checks the Sentinel shape, naming the field; answers ioredis's options for it. */
export function sentinelClientOptions(options: SentinelStoreOptions, base: RedisOptions): RedisOptions {
  const sentinels = validateSentinels(options.sentinels, "RedisStore: sentinels");
  if (typeof options.name !== "string" || !/^\S+$/.test(options.name)) throw new TypeError(`RedisStore: name must be the master's name as the sentinels know it ("sentinel monitor NAME …" in sentinel.conf), got ${JSON.stringify(options.name) ?? String(options.name)}`);
  for (const field of ["sentinelUsername", "sentinelPassword", "username", "password"] as const) {
    const value = options[field];
    if (value !== undefined && (typeof value !== "string" || value === "")) throw new TypeError(`RedisStore: ${field} must be a non-empty string`);
  }
  for (const field of ["tls", "sentinelTls"] as const) {
    const value = options[field];
    if (value !== undefined && typeof value !== "boolean" && (typeof value !== "object" || value === null)) throw new TypeError(`RedisStore: ${field} must be true, false or node:tls options, got ${String(value)}`);
  }
  if (options.db !== undefined && (!Number.isInteger(options.db) || options.db < 0 || options.db > 99)) throw new TypeError(`RedisStore: db must be a database number (0 … 99), got ${String(options.db)}`);
  const tls = tlsOptions(options.tls);
  const sentinelTls = tlsOptions(options.sentinelTls ?? options.tls);
  return {
    ...base,
    sentinels: sentinels.map(({ host, port }) => ({ host, port })),
    name: options.name,
    ...(options.sentinelUsername ? { sentinelUsername: options.sentinelUsername } : {}),
    ...(options.sentinelPassword ? { sentinelPassword: options.sentinelPassword } : {}),
    ...(options.username ? { username: options.username } : {}),
    ...(options.password ? { password: options.password } : {}),
    ...(options.db !== undefined ? { db: options.db } : {}),
    ...(tls ? { tls, enableTLSForSentinelMode: true } : {}),
    ...(sentinelTls ? { sentinelTLS: sentinelTls } : {}),
    // Asking the sentinels again as quickly as reconnecting to a master: a failover is
    // noticed by the first connect that finds the new address.
    sentinelRetryStrategy: base.retryStrategy as (attempt: number) => number,
    // A sentinel that accepts the connection but never answers must not hold up the round.
    sentinelCommandTimeout: 1000,
  };
}

function tlsOptions(value: boolean | ConnectionOptions | undefined): ConnectionOptions | undefined {
  if (value === undefined || value === false) return undefined;
  return value === true ? {} : value;
}

/** The client a store makes for `sentinels` + `name`. */
export function createSentinelClient(options: SentinelStoreOptions, base: RedisOptions): Redis {
  return new Redis(sentinelClientOptions(options, base));
}

/** Where a Sentinel store connects, for messages: `master "mymaster" via sentinels 10.0.0.1:26379, …`. */
export function sentinelTarget(options: SentinelStoreOptions): string {
  return `master ${JSON.stringify(options.name)} via sentinel${options.sentinels.length === 1 ? "" : "s"} ${options.sentinels.map(formatAddress).join(", ")}`;
}

/** What went wrong reaching a Sentinel master, and which option to blame (`name`: no retry will fix it). */
export interface SentinelTrouble {
  message: string;
  /** What to fix: the master's name, or the sentinel list (none answered, or each refused the credentials). */
  field?: "name" | "sentinels";
}

/**
 * Turns ioredis's Sentinel events into one line. ioredis emits `sentinelError` once per
 * sentinel that failed in a round of asking them, then `error` ("All sentinels are
 * unreachable …") when the round found no master; the line names each sentinel's answer.
 * Errors connecting to the master itself (the address the sentinels gave) pass through.
 */
export class SentinelErrors {
  private readonly round: string[] = [];
  private unknownName = false;
  private readonly options: SentinelStoreOptions;

  constructor(options: SentinelStoreOptions) {
    this.options = options;
  }

  /** A `sentinelError` event: one sentinel's failure in the current round. */
  sentinelFailed(error: Error): void {
    const asked = /sentinel (\S+)/.exec(error.message)?.[1] ?? "a sentinel";
    // Sentinel answers no address (ioredis: "invalid reply: null"), or refuses the name in the
    // SENTINEL SENTINELS that ioredis sends after it.
    if (/successfully, but got an invalid reply: null|No such master with that name/.test(error.message)) {
      this.unknownName = true;
      this.round.push(`${asked} knows no master named ${JSON.stringify(this.options.name)}`);
    } else {
      // ioredis's sentinel connections do not retry: a refused one says only "Connection is closed."
      const said = error.message.replace(/^failed to connect to sentinel \S+ because /, "").replace(/^Connection is closed\.$/, "no connection (refused, or closed before it answered)");
      this.round.push(`${asked}: ${said}`);
    }
  }

  /**
   * An `error` event on the client: the end of a round with no master (answers the line for
   * it), or undefined for an error that is not the sentinels' (connecting to the master).
   */
  roundFailed(error: Error): SentinelTrouble | undefined {
    if (!/^All sentinels are unreachable/.test(error.message)) return undefined;
    const answers = this.round.splice(0);
    const unknownName = this.unknownName;
    this.unknownName = false;
    const target = sentinelTarget(this.options);
    if (unknownName) {
      return { field: "name", message: `cannot find Redis ${target}: ${answers.join("; ")} (check the master name: it is NAME in sentinel.conf's "sentinel monitor NAME host port quorum"; SENTINEL MASTERS lists them)` };
    }
    const said = answers.length > 0 ? answers.join("; ") : error.message.replace(/ Retrying from scratch after \d+ms\./, "");
    return { field: "sentinels", message: `cannot reach any sentinel of Redis ${target}: ${said} (${hintFor(said)})` };
  }
}

function hintFor(said: string): string {
  if (/NOAUTH|WRONGPASS|invalid password|invalid username/i.test(said)) return "a sentinel refused the credentials: check the sentinels' password (sentinelPassword; they have their own, not the master's)";
  if (/ECONNREFUSED|no connection \(refused/.test(said)) return "is redis-sentinel running there, on that port?";
  if (/ENOTFOUND|EAI_AGAIN/.test(said)) return "no such host: check the sentinel addresses";
  return "check the sentinel addresses, their TLS setting and any firewall between";
}
