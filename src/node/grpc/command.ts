import { type Server, createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { Registry } from "prom-client";
import { ValidationError } from "../../core/validation.js";
import { RlsStats } from "../../rls/stats.js";
import { type RlsEnvSettings, parseRlsEnv } from "./env.js";
import { createRlsLogger } from "./log.js";
import { registerRlsMetrics } from "./metrics.js";
import { createRlsRedis } from "./redis.js";
import { loadRuntimeConfig, runtimeConfigDir, watchRuntime } from "./runtime.js";
import { startRlsServer } from "./server.js";
import { closeHttpServer } from "../http/close-server.js";
import { currentTracer } from "../../observe/trace.js";
import { traceLimiter } from "../../observe/traced-limiter.js";

/** `spillway rls` while it runs. */
export interface RunningRlsCommand {
  settings: RlsEnvSettings;
  /** The gRPC target (host:port, or unix:PATH with GRPC_UDS). */
  grpcAddress: string;
  httpUrl: string;
  prometheusUrl?: string;
  /** Re-reads the runtime directory (SIGHUP, or the watcher): a bad file keeps the config in force. */
  reload(): Promise<boolean>;
  close(): Promise<void>;
}

/** How often the runtime directory is polled for a change (RUNTIME_WATCH_ROOT decides what counts). */
const WATCH_INTERVAL_MS = 1000;

/**
 * `spillway rls`: envoyproxy/ratelimit's service configured as the reference is, by its
 * environment alone (env-table.ts: every variable honoured, not applicable, or refused).
 * The config is read, certificates loaded and variables checked before anything connects:
 * a mistake is a ValidationError naming the variable or file (exit 2).
 */
export async function startRlsCommand(env: Record<string, string | undefined>, options: { write?: (line: string) => void; watchIntervalMs?: number } = {}): Promise<RunningRlsCommand> {
  const { settings, ignored } = parseRlsEnv(env);
  const log = createRlsLogger(settings.log.level, settings.log.format, options.write);
  if (ignored.length > 0) log.warn(`not applicable to spillway rls, ignored: ${ignored.join(", ")} (docs/envoy.md says why)`);
  let config = await loadRuntimeConfig(settings.runtime);
  if (config.domains.size === 0) log.warn(`no domain in ${runtimeConfigDir(settings.runtime)}: every request is answered OK`);
  const grpcTls = settings.grpc.tls ? await readGrpcTls(settings.grpc.tls) : undefined;

  const redis = await createRlsRedis(settings.redis, (line) => log.warn(line));
  const closers: (() => Promise<unknown>)[] = [() => redis.close()];
  const close = async () => {
    for (const closer of closers.splice(0).reverse()) await closer().catch(() => {});
  };
  try {
    const stats = settings.stats.enabled ? new RlsStats() : undefined;
    const healthy = () => !settings.healthyWithAtLeastOneConfig || config.domains.size > 0;
    const grpc = await startRlsServer({
      limiter: traceLimiter(redis.store, currentTracer()),
      config,
      port: settings.grpc.port,
      hostname: settings.grpc.host,
      ...(settings.grpc.uds ? { unixSocket: settings.grpc.uds } : {}),
      ...(grpcTls ? { tls: grpcTls.pair, ...(grpcTls.clientCa ? { clientCa: grpcTls.clientCa } : {}) } : {}),
      grpcOptions: { "grpc.max_connection_age_ms": settings.grpc.maxConnectionAgeMs, "grpc.max_connection_age_grace_ms": settings.grpc.maxConnectionAgeGraceMs },
      stats,
      quotaMode: settings.quotaMode,
      shadowMode: settings.shadowMode,
      dynamicMetadata: settings.dynamicMetadata,
      ...(settings.responseHeaders ? { referenceHeaders: settings.responseHeaders } : {}),
      nearLimitRatio: settings.stats.nearLimitRatio,
      healthy,
      log: (line) => log.error(line),
    });
    closers.push(() => grpc.close());
    const health = async () => healthy() && (await redis.store.health().then((state) => state.ok, () => false));
    const http = await listen(
      createServer((request, response) => {
        const path = (request.url ?? "/").split("?")[0];
        if (path !== "/healthcheck" && path !== "/healthz") return response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
        void health().then((ok) => response.writeHead(ok ? 200 : 500, { "content-type": "text/plain" }).end(ok ? "OK" : "NOT_SERVING"));
      }),
      settings.http,
      "PORT",
    );
    closers.push(() => closeServer(http.server));
    let prometheusUrl: string | undefined;
    if (settings.stats.prometheus && stats) {
      const registry = new Registry();
      registerRlsMetrics(registry, stats);
      const { path } = settings.stats.prometheus;
      const metrics = await listen(
        createServer((request, response) => {
          if ((request.url ?? "/").split("?")[0] !== path) return response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
          void registry.metrics().then((text) => response.writeHead(200, { "content-type": registry.contentType }).end(text));
        }),
        settings.stats.prometheus,
        "PROMETHEUS_ADDR",
      );
      closers.push(() => closeServer(metrics.server));
      prometheusUrl = `${metrics.url}${path}`;
    }
    const reload = async () => {
      try {
        config = await loadRuntimeConfig(settings.runtime);
        grpc.setConfig(config);
        log.info(`reloaded ${runtimeConfigDir(settings.runtime)} (${config.domains.size} domain(s))`);
        return true;
      } catch (error) {
        log.error(`reload refused, the config in force stays: ${(error as Error).message}`);
        return false;
      }
    };
    const stopWatching = await watchRuntime(settings.runtime, options.watchIntervalMs ?? WATCH_INTERVAL_MS, reload);
    closers.push(async () => stopWatching());
    // At warn, the reference's default level, as the reference logs its "Listening for gRPC on" lines: a start is never silent.
    log.warn(`rate limit service (gRPC${grpcTls ? " over TLS" : ""}) on ${grpc.address}, ${config.domains.size} domain(s) from ${runtimeConfigDir(settings.runtime)}; store: Redis ${redis.target}; health on ${http.url}/healthcheck${prometheusUrl ? `; metrics on ${prometheusUrl}` : ""}`);
    return { settings, grpcAddress: grpc.address, httpUrl: http.url, ...(prometheusUrl ? { prometheusUrl } : {}), reload, close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function readGrpcTls(tls: NonNullable<RlsEnvSettings["grpc"]["tls"]>): Promise<{ pair: { cert: Buffer; key: Buffer }; clientCa?: Buffer }> {
  const read = async (path: string, name: string) => {
    try {
      return await readFile(path);
    } catch (error) {
      throw new ValidationError(name, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  };
  const pair = { cert: await read(tls.certPath, "GRPC_SERVER_TLS_CERT"), key: await read(tls.keyPath, "GRPC_SERVER_TLS_KEY") };
  return tls.clientCaPath ? { pair, clientCa: await read(tls.clientCaPath, "GRPC_CLIENT_TLS_CACERT") } : { pair };
}

function listen(server: Server, address: { host: string; port: number }, variable: string): Promise<{ server: Server; url: string }> {
  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => reject(new Error(`cannot listen on ${address.host}:${address.port} (${variable}): ${error.code ?? error.message}`)));
    server.listen(address.port, address.host, () => {
      const bound = server.address();
      const port = typeof bound === "object" && bound ? bound.port : address.port;
      const host = address.host === "0.0.0.0" ? "127.0.0.1" : address.host.includes(":") ? `[${address.host}]` : address.host;
      resolve({ server, url: `http://${host}:${port}` });
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return closeHttpServer(server, 10_000);
}
