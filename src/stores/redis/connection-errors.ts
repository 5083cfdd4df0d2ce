/**
 * What a user reads when Redis cannot be reached: the URL (never its password), the system's
 * own error (`ECONNREFUSED 127.0.0.1:6380`, `ENOTFOUND redis.internal`, a TLS mismatch) and
 * what to do about it. And the URL checks that turn a malformed one into a TypeError naming it,
 * where ioredis would take it silently and connect to localhost.
 */

const REDIS_SCHEMES = new Set(["redis:", "rediss:"]);

/**
 * A Redis URL checked: `redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS.
 * Throws a TypeError naming `field` and the URL (password hidden) otherwise.
 */
export function validateRedisUrl(value: unknown, field: string): string {
  if (typeof value !== "string" || value === "") throw new TypeError(`${field} must be a redis:// or rediss:// URL (redis://127.0.0.1:6379), got ${JSON.stringify(value) ?? String(value)}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`${field} is not a URL: ${JSON.stringify(redactRedisUrl(value))} (expected redis://host:6379 or rediss://host:6380)`);
  }
  if (!REDIS_SCHEMES.has(url.protocol)) throw new TypeError(`${field} must start with redis:// or rediss:// (TLS), got ${JSON.stringify(redactRedisUrl(value))}`);
  if (url.hostname === "") throw new TypeError(`${field} names no host: ${JSON.stringify(redactRedisUrl(value))} (expected redis://host:6379)`);
  const db = url.pathname.replace(/^\//, "");
  if (db !== "" && !/^\d{1,2}$/.test(db)) throw new TypeError(`${field}: the path must be a database number (redis://host:6379/0), got /${db} in ${JSON.stringify(redactRedisUrl(value))}`);
  return value;
}

/** The URL with its password (and a user-only secret) replaced by `***`, for messages and logs. */
export function redactRedisUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.password) url.password = "***";
    else if (url.username) url.username = "***";
    return url.toString().replace(/\/$/, "");
  } catch {
    // Not a URL: hide whatever sits between :// and @.
    return value.replace(/\/\/[^@/]*@/, "//***@");
  }
}

/** ioredis's and Node's error, as the system says it: `connect ECONNREFUSED 127.0.0.1:6380`. */
function systemError(error: Error): string {
  const { code, syscall, address, port, hostname } = error as Error & { code?: string; syscall?: string; address?: string; port?: number; hostname?: string };
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `${code} ${hostname ?? ""}`.trim();
  if (code && address) return `${syscall ? `${syscall} ` : ""}${code} ${address}${port ? `:${port}` : ""}`;
  return error.message;
}

/** What to do about a connection error, by its kind. */
function hintFor(error: Error, url: string | undefined): string {
  const code = (error as { code?: string }).code;
  const tls = url?.startsWith("rediss:");
  if (code === "ECONNREFUSED") return "is redis-server running there, on that port?";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "no such host: check the host name in the URL";
  if (code === "ETIMEDOUT" || /timed? ?out/i.test(error.message)) {
    // A server without TLS never answers a TLS handshake: the connect times out.
    if (tls) return "no TLS handshake: if this server does not speak TLS, use redis:// instead of rediss://; else check the host, the port and any firewall between";
    return "nothing answered: check the host, the port and any firewall between";
  }
  if (/ssl|tls|certificate|wrong version number|EPROTO/i.test(`${code ?? ""} ${error.message}`) || (tls && code === "ECONNRESET")) {
    return tls ? "the TLS handshake failed: if this server does not speak TLS, use redis:// instead of rediss://" : "a TLS error: check the server's certificate";
  }
  if (/NOAUTH|WRONGPASS|invalid password|invalid username/i.test(error.message)) return "Redis refused the credentials: check the user and password in the URL";
  if (!tls && (code === "ECONNRESET" || /closed|end/i.test(error.message))) return "the server closed the connection: if it expects TLS, use rediss://";
  return "check that the URL points at a Redis server";
}

/**
 * One line for a failed connection: where, what the system said, what to do.
 *
 * @example describeConnectionError(new Error("connect ECONNREFUSED 127.0.0.1:6380"), "redis://127.0.0.1:6380")
 * // "cannot connect to Redis at redis://127.0.0.1:6380: connect ECONNREFUSED 127.0.0.1:6380 (is redis-server running there? …)"
 */
export function describeConnectionError(error: Error, url: string | undefined): string {
  const where = url ? ` at ${redactRedisUrl(url)}` : "";
  return `cannot connect to Redis${where}: ${systemError(error)} (${hintFor(error, url)})`;
}
