import { type Server, createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { Registry } from "prom-client";
import { ValidationError } from "../../core/validation.js";
import { RlsStats } from "../../rls/stats.js";
import { type RlsEnvSettings, parseRlsEnv } from "./env.js";
import { createRlsLogger } from "./log.js";
import { loadStatsdMapper } from "./mapper.js";
import { registerRlsMetrics } from "./metrics.js";
import { createRlsRedis } from "./redis.js";
import { loadRuntimeConfig, runtimeConfigDir, watchRuntime } from "./runtime.js";
import { type RunningRlsServer, startRlsServer } from "./server.js";
import type { RlsConfig } from "../../rls/types.js";
import { type XdsConfigSource, startXdsConfig } from "./xds-client.js";
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
export async function startRlsCommand(env: Record<string, string | undefined>, options: { write?: (line: string) => void; watchIntervalMs?: number; stopped?: Promise<unknown> } = {}): Promise<RunningRlsCommand> {
  const { settings, ignored } = parseRlsEnv(env);
  const log = createRlsLogger(settings.log.level, settings.log.format, options.write);
  if (ignored.length > 0) log.warn(`not applicable to spillway rls, ignored: ${ignored.join(", ")} (docs/envoy.md says why)`);
  const grpcTls = settings.grpc.tls ? await readGrpcTls(settings.grpc.tls) : undefined;
  const mapperPath = settings.stats.enabled ? settings.stats.prometheus?.mapperYamlPath : undefined;
  const mapper = mapperPath ? await loadStatsdMapper(mapperPath, (line) => log.warn(line)) : undefined;
  let grpcServer: RunningRlsServer | undefined;
  let config: RlsConfig;
  let xds: XdsConfigSource | undefined;
  if (settings.xds) {
    xds = await startXdsConfig(settings.xds, { apply: (next) => ((config = next), grpcServer?.setConfig(next)), log });
    config = await firstXdsConfig(xds, settings.xds, log, options.stopped);
  } else {
    config = await loadRuntimeConfig(settings.runtime);
    if (config.domains.size === 0) log.warn(`no domain in ${runtimeConfigDir(settings.runtime)}: every request is answered OK`);
  }
  const source = settings.xds ? `the xDS server at ${settings.xds.serverUrl}` : runtimeConfigDir(settings.runtime);

  const redis = await createRlsRedis(settings.redis, (line) => log.warn(line)).catch((error: unknown) => {
    xds?.close();
    throw error;
  });
  const closers: (() => Promise<unknown>)[] = [() => redis.close()];
  if (xds) closers.unshift(async () => xds.close());
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
      ...(xds ? { unconfigured: () => (xds.current() ? undefined : `no rate limit configuration yet: waiting for ${source}`) } : {}),
      log: (line) => log.error(line),
    });
    grpcServer = grpc;
    // A push may have landed while the server started.
    grpc.setConfig(config);
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
      registerRlsMetrics(registry, stats, mapper);
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
      if (xds) {
        log.info(`the config comes from ${source} (version ${JSON.stringify(xds.version())}): nothing to re-read`);
        return false;
      }
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
    if (!xds) {
      const stopWatching = await watchRuntime(settings.runtime, options.watchIntervalMs ?? WATCH_INTERVAL_MS, reload);
      closers.push(async () => stopWatching());
    }
    // At warn, the reference's default level, as the reference logs its "Listening for gRPC on" lines: a start is never silent.
    log.warn(`rate limit service (gRPC${grpcTls ? " over TLS" : ""}) on ${grpc.address}, ${config.domains.size} domain(s) from ${source}; store: Redis ${redis.target}; health on ${http.url}/healthcheck${prometheusUrl ? `; metrics on ${prometheusUrl}` : ""}`);
    return { settings, grpcAddress: grpc.address, httpUrl: http.url, ...(prometheusUrl ? { prometheusUrl } : {}), reload, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Raised when a stop signal comes before the xDS server's first config: `spillway rls` then exits 0. */
export class RlsStartStopped extends Error {
  constructor() {
    super("stopped before the first config arrived");
    this.name = "RlsStartStopped";
  }
}

/**
 * The config to start with: as the reference, nothing serves until the xDS server's first
 * config unless FORCE_START_WITHOUT_INITIAL_CONFIG (then an empty config, and calls are
 * UNAVAILABLE until the first arrives). A stop signal meanwhile ends the wait.
 */
async function firstXdsConfig(xds: XdsConfigSource, settings: NonNullable<RlsEnvSettings["xds"]>, log: { warn(line: string): void }, stopped?: Promise<unknown>): Promise<RlsConfig> {
  if (settings.forceStart) return xds.current() ?? { domains: new Map() };
  log.warn(`waiting for the first config from the xDS server at ${settings.serverUrl} (node ${JSON.stringify(settings.nodeId)}) before serving; FORCE_START_WITHOUT_INITIAL_CONFIG=true serves at once`);
  const stop = stopped?.then(() => {
    throw new RlsStartStopped();
  });
  try {
    return await (stop ? Promise.race([xds.first, stop]) : xds.first);
  } catch (error) {
    xds.close();
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
