import { readFile } from "node:fs/promises";
import type { ConnectionOptions } from "node:tls";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { ValidationError } from "../../core/validation.js";
import { REDIS_CLIENT_OPTIONS } from "../../stores/redis/options.js";
import { RedisStore } from "../../stores/redis/store.js";
import type { RlsRedisSettings } from "./env.js";

/** How long `spillway rls` waits for Redis at start before serving anyway (as `spillway serve`). */
const STARTUP_WAIT_MS = 3000;

/** The store of `spillway rls` and what closing it takes (the client is ours: the store does not quit a client it was given). */
export interface RlsRedis {
  store: RedisStore;
  /** Where it connects, passwords left out, for the startup line. */
  target: string;
  close(): Promise<void>;
}

/**
 * The Redis client the reference's settings describe: one server over TCP or a unix socket,
 * a Cluster from its seed nodes, or a master found through its Sentinels (the store's own
 * Sentinel client, which follows failovers), with REDIS_AUTH (password or user:password),
 * REDIS_SENTINEL_AUTH and REDIS_TLS (CA, client certificate, hostname check; to the Sentinels
 * too, as in the reference). Certificate files that cannot be read are a ValidationError
 * naming the variable; so is a master name the Sentinels do not know.
 */
export async function createRlsRedis(settings: RlsRedisSettings, log: (line: string) => void): Promise<RlsRedis> {
  const tls = settings.tls ? await tlsOptions(settings.tls) : undefined;
  if (settings.type === "sentinel") return sentinelRedis(settings, tls, log);
  const options: RedisOptions = { ...REDIS_CLIENT_OPTIONS };
  if (settings.username !== undefined) options.username = settings.username;
  if (settings.password !== undefined) options.password = settings.password;
  if (tls) options.tls = tls;
  let client: Redis | Cluster;
  let target: string;
  if (settings.type === "cluster") {
    client = new Cluster(settings.nodes, { enableOfflineQueue: false, clusterRetryStrategy: REDIS_CLIENT_OPTIONS.retryStrategy, redisOptions: options });
    target = `cluster ${settings.nodes.map(({ host, port }) => `${host}:${port}`).join(",")}`;
  } else if (settings.socketPath !== undefined) {
    client = new Redis({ ...options, path: settings.socketPath });
    target = `unix socket ${settings.socketPath}`;
  } else {
    const { host, port } = settings.nodes[0]!;
    client = new Redis({ ...options, host, port });
    target = `${host}:${port}`;
  }
  if (settings.tls) target += " (TLS)";
  // The store reports connection trouble through health() and each call's error; one line per kind of error here.
  let lastError = "";
  client.on("error", (error: Error) => {
    if (error.message === lastError) return;
    lastError = error.message;
    log(`spillway: rls: Redis ${target}: ${error.message}`);
  });
  client.on("ready", () => (lastError = ""));
  const store = new RedisStore({ client, log, ...(settings.keyPrefix === undefined ? {} : { keyPrefix: settings.keyPrefix }), ...(settings.timeoutMs === undefined ? {} : { timeoutMs: settings.timeoutMs }) });
  if (!(await store.ready(STARTUP_WAIT_MS))) log(`spillway: rls: serving anyway: calls answer UNAVAILABLE until Redis ${target} answers (health says NOT_SERVING meanwhile)`);
  return {
    store,
    target,
    async close() {
      await store.close();
      await client.quit().catch(() => client.disconnect());
    },
  };
}

async function sentinelRedis(settings: RlsRedisSettings, tls: ConnectionOptions | undefined, log: (line: string) => void): Promise<RlsRedis> {
  const target = `master ${settings.sentinelName} through sentinels ${settings.nodes.map(({ host, port }) => `${host}:${port}`).join(",")}${tls ? " (TLS)" : ""}`;
  // The reference's REDIS_SENTINEL_AUTH, like REDIS_AUTH: "password" or "user:password".
  const [sentinelUsername, sentinelPassword] = splitAuth(settings.sentinelPassword);
  const store = new RedisStore({
    sentinels: settings.nodes,
    name: settings.sentinelName!,
    ...(settings.username === undefined ? {} : { username: settings.username }),
    ...(settings.password === undefined ? {} : { password: settings.password }),
    ...(sentinelUsername === undefined ? {} : { sentinelUsername }),
    ...(sentinelPassword === undefined ? {} : { sentinelPassword }),
    ...(tls ? { tls } : {}),
    ...(settings.keyPrefix === undefined ? {} : { keyPrefix: settings.keyPrefix }),
    ...(settings.timeoutMs === undefined ? {} : { timeoutMs: settings.timeoutMs }),
    log,
  });
  const ready = await store.ready(STARTUP_WAIT_MS);
  // Sentinels that answer but know no such master: no retry fixes a misspelt name.
  if (!ready && store.connectionErrorField === "name") {
    await store.close();
    throw new ValidationError("REDIS_URL", `the master name ${JSON.stringify(settings.sentinelName)}: ${store.connectionError}`);
  }
  if (!ready) log(`spillway: rls: serving anyway: calls answer UNAVAILABLE until Redis ${target} answers (health says NOT_SERVING meanwhile)`);
  return { store, target, close: () => store.close() };
}

function splitAuth(auth: string | undefined): [string | undefined, string | undefined] {
  if (auth === undefined) return [undefined, undefined];
  const colon = auth.indexOf(":");
  return colon < 0 ? [undefined, auth] : [auth.slice(0, colon), auth.slice(colon + 1)];
}

async function tlsOptions(tls: NonNullable<RlsRedisSettings["tls"]>): Promise<ConnectionOptions> {
  const read = async (path: string, name: string) => {
    try {
      return await readFile(path);
    } catch (error) {
      throw new ValidationError(name, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  };
  return {
    ...(tls.caPath ? { ca: await read(tls.caPath, "REDIS_TLS_CACERT") } : {}),
    ...(tls.certPath ? { cert: await read(tls.certPath, "REDIS_TLS_CLIENT_CERT") } : {}),
    ...(tls.keyPath ? { key: await read(tls.keyPath, "REDIS_TLS_CLIENT_KEY") } : {}),
    // Still checked against the CA; only the name is not compared.
    ...(tls.skipHostnameVerification ? { checkServerIdentity: () => undefined } : {}),
  };
}
