// `spillway serve`: one process, or the primary of `--workers N`; the optional packages it loads and the listens it reports.
import { parseConfig } from "../../config/config.js";
import { ValidationError } from "../../core/validation.js";
import { parseGatewayConfig } from "../../gateway/config.js";
import { parseServeArgs } from "../args/serve.js";
import { serveNotify } from "../serve/notify.js";
import { originAgents } from "../http/origin-agents.js";
import { onHangup } from "../serve/reload.js";
import { type Serving, configOf, configReloader, runtimePartsOf } from "../serve/serving.js";
import { startServer } from "../serve/server.js";
import type { Limiter } from "../../core/limiter.js";
import { createStore } from "../serve/stores.js";
import cluster from "node:cluster";
import { linkToPrimary } from "../cluster/worker-link.js";
import { runPrimary } from "../cluster/primary.js";
import { MissingPackageError, importNeeding, isMissingPackage } from "./optional-packages.js";
import { counted, readConfig, untilStopSignal } from "./run.js";
import { otelTraceSettings } from "../tracing/settings.js";
import { currentTracer } from "../../observe/trace.js";
import { traceLimiter } from "../../observe/traced-limiter.js";
import type { RunningTracing } from "../tracing/otel.js";
import { startTracing, stopTracing } from "./tracing.js";

/** `spillway serve`: exit 0 after a signal's clean shutdown, 2 for bad flags or config, 1 for anything else. */
export async function serve(argv: string[]): Promise<number> {
  if (cluster.isPrimary && argv.some((arg) => arg === "--workers" || arg.startsWith("--workers="))) return servePrimary(argv);
  // A worker of --workers N: the primary prints its startup lines once for all, and stops it.
  const worker = cluster.isWorker ? linkToPrimary() : undefined;
  const startupLines: string[] = [];
  const say = (line: string, warn = false) => (worker ? startupLines.push(line) : warn ? console.warn(line) : console.log(line));
  let limiter: Limiter | undefined;
  let tracing: RunningTracing | undefined;
  // Listening for signals from the start: one that comes while the store connects, or just as
  // "listening" is printed, still stops the server (gracefully, once it has started).
  const stopSignal = untilStopSignal(worker);
  // SIGHUP's default is to end the process, which must never happen to a server being reloaded.
  const reloads: Array<() => Promise<unknown>> = [];
  const offHangup = onHangup(reloads);
  try {
    const args = parseServeArgs(argv, process.env);
    // A rate limit service alone needs no spillway.config.json: no policies, no gateway.
    const startText = args.configPath ? await readConfig(args.configPath) : undefined;
    const config = startText !== undefined ? configOf(startText, args.configPath!) : parseConfig({ policies: [] });
    // Validate the gateway part before connecting anywhere: a bad config fails at once.
    const gateway = parseGatewayConfig(config);
    // Optional packages (optional-packages.ts): gRPC is checked before anything starts.
    const rlsModule = args.rls ? await importRls() : undefined;
    const authzModule = args.extAuthzPort !== undefined ? await importAuthz() : undefined;
    const rlsPrepared = args.rls ? await rlsModule!.prepareRls(args.rls) : undefined;
    const metrics = args.metrics ? await metricsModules() : undefined;
    // Traces (OTEL_TRACES_EXPORTER=otlp): on before anything is built, since edges read the tracer when built.
    tracing = await startTracing(otelTraceSettings(process.env), TRACING_FOR);
    const notices = serveNotify(await createStore(args.store), config);
    limiter = traceLimiter(notices.limiter, currentTracer());
    const observing = metrics ? metrics.observability.createNodeObservability({ config, limiter }) : undefined;
    // A worker's /metrics is every worker's, summed by the primary.
    const scraper = observing && worker ? { scrape: () => worker.scrape() } : observing?.prometheus;
    const routes = observing && scraper ? { ...observing.routes, metrics: () => scraper.scrape() } : undefined;
    // One set of origin connection pools for every generation of the gateway.
    const serving: Serving = { limiter, observer: observing?.observer, agents: originAgents(), configured: (next) => notices.configure(next) };
    const parts = runtimePartsOf(config, serving, gateway);
    // A worker's health says not ready until the primary says every worker listens (worker-link.ts).
    const notReady = worker ? () => worker.notReady() : undefined;
    const server = await listening(startServer({ ...parts, limiter: observing?.apiLimiter ?? limiter, port: args.port, hostname: args.hostname, observability: routes, unobserved: unobservedReason(args.metrics), notReady }), "--port", args.port, args.hostname);
    // A worker's reloads are the primary's: it logs them once, and sends every worker the text it read.
    const reloader = args.configPath && startText !== undefined ? configReloader(args.configPath, startText, serving, server, observing, worker ? () => {} : undefined) : undefined;
    if (reloader && !worker) reloads.push(() => reloader.reload("signal"));
    if (reloader && observing) metrics!.reloadMetrics.registerReloadMetrics(observing.prometheus.registry, reloader, () => server.generation);
    const stopWatching = args.watch && !worker ? reloader?.watch() : undefined;
    const metricsServer = scraper && args.metricsPort !== undefined ? await listening(metrics!.observability.startMetricsServer(scraper, args.metricsPort, args.hostname), "--metrics-port", args.metricsPort, args.hostname) : undefined;
    if (metricsServer) say(`spillway: metrics on ${metricsServer.url}/metrics (no token)`);
    const rlsHost = args.rls?.hostname ?? args.hostname;
    const rlsOptions = { limiter, hostname: rlsHost, registry: observing?.prometheus.registry, ...(worker ? { log: () => {}, healthy: () => worker.notReady() === undefined } : {}) };
    const rls = args.rls && rlsPrepared && rlsModule ? await listening(rlsModule.serveRls(args.rls, rlsPrepared, rlsOptions), "--rls-port", args.rls.port, rlsHost, args.rls.hostname ? "--rls-host" : "--host") : undefined;
    if (rls && !worker) reloads.push(() => rls.reload());
    if (rls) say(`spillway: rate limit service (gRPC${rlsPrepared?.tls ? " over TLS" : ""}) on ${rls.server.address}, ${counted(rlsPrepared!.config.domains.size, "domain")} from ${args.rls!.configPath}`);
    const authz = authzModule ? await listening(authzModule.startAuthzServer({ auth: () => server.forwardAuth, port: args.extAuthzPort!, hostname: args.hostname, ...(worker ? { log: () => {} } : {}) }), "--ext-authz-port", args.extAuthzPort!, args.hostname) : undefined;
    if (authz) say(`spillway: ext_authz (gRPC) on ${authz.address}${gateway ? "" : ": the config has no origin, so no routes: every Check is FAILED_PRECONDITION"}`);
    if (!process.env.SPILLWAY_TOKEN) say("spillway: SPILLWAY_TOKEN is not set: /v1 answers 503 until it is (SPILLWAY_TOKEN=… spillway serve …)", true);
    say(`spillway: listening on ${server.url} (store: ${limiter.kind}${gateway ? `, gateway to ${gateway.origin}` : ""})`);
    worker?.handle({
      collect: observing ? () => observing.prometheus.registry.getMetricsAsJSON() : undefined,
      reloadConfig: (text) => void reloader?.reloadText(text, "signal"),
      reloadRls: () => void rls?.reload(),
    });
    worker?.ready(startupLines);
    await stopSignal;
    if (!worker) console.log("spillway: shutting down (letting in-flight requests finish)");
    stopWatching?.();
    await authz?.close();
    await rls?.close(); // before the HTTP server closes the store under it
    await Promise.all([server.close(), metricsServer?.close()]);
    notices.close();
    await stopTracing(tracing);
    return 0;
  } catch (error) {
    // Whatever failed, nothing may keep the process alive (a Redis client reconnecting forever).
    await limiter?.close?.().catch(() => {});
    await stopTracing(tracing);
    console.error(`spillway: ${(error as Error).message}`);
    return error instanceof ValidationError || error instanceof MissingPackageError ? 2 : 1;
  } finally {
    offHangup();
  }
}

/**
 * `spillway serve --workers N` in the primary: everything checked here first (flags, config,
 * RLS files: a mistake exits 2 once, before any worker starts), then runPrimary (cluster/primary.ts).
 */
async function servePrimary(argv: string[]): Promise<number> {
  // SIGHUP's default ends the process: ignored until runPrimary takes it.
  const ignoreHangup = () => {};
  process.on("SIGHUP", ignoreHangup);
  try {
    const args = parseServeArgs(argv, process.env);
    const startText = args.configPath ? await readConfig(args.configPath) : undefined;
    if (startText !== undefined) parseGatewayConfig(configOf(startText, args.configPath!));
    otelTraceSettings(process.env); // a bad OTEL_* value exits 2 once, before any worker starts
    if (args.rls) await (await importRls()).prepareRls(args.rls);
    return await runPrimary({ ...args, workers: args.workers! }, startText);
  } catch (error) {
    console.error(`spillway: ${(error as Error).message}`);
    return error instanceof ValidationError || error instanceof MissingPackageError ? 2 : 1;
  } finally {
    process.off("SIGHUP", ignoreHangup);
  }
}

/** The ext_authz server's modules: gRPC is an optional peer. */
function importAuthz() {
  return importNeeding(() => import("../grpc/authz-server.js"), ["@grpc/grpc-js", "@grpc/proto-loader"], "--ext-authz-port (Envoy's ext_authz)");
}
/** What asked for traces, for the message when their packages are missing. */
const TRACING_FOR = "tracing (OTEL_TRACES_EXPORTER=otlp)";

/** The RLS server's modules: gRPC is an optional peer (optional-packages.ts). */
function importRls() {
  return importNeeding(() => import("../grpc/serve.js"), ["@grpc/grpc-js", "@grpc/proto-loader"], "--rls-port (Envoy's rate limit service)");
}

/**
 * prom-client and uplot (optional peers) for /metrics, /v1/top, /v1/stats and /dashboard. Not
 * installed: serve runs without them, as with --no-metrics, and says so in one line.
 */
async function metricsModules() {
  try {
    const [observability, reloadMetrics] = await Promise.all([import("../metrics/observability.js"), import("../serve/reload-metrics.js")]);
    const { createRequire } = await import("node:module");
    createRequire(import.meta.url).resolve("uplot/dist/uPlot.iife.min.js");
    return { observability, reloadMetrics };
  } catch (error) {
    if (!isMissingPackage(error, ["prom-client", "uplot"])) throw error;
    console.warn("spillway: metrics off: /metrics, /v1/top, /v1/stats and /dashboard need prom-client and uplot: npm install prom-client uplot (--no-metrics silences this line)");
    return undefined;
  }
}

/** Why /metrics, /v1/top, /v1/stats and /dashboard answer 404: the flag, or the packages they need. */
function unobservedReason(metricsOn: boolean): string {
  return metricsOn
    ? "prom-client and uplot are not installed (npm install prom-client uplot, then restart spillway serve)"
    : "spillway serve runs with --no-metrics (start it without that flag for /metrics, /v1/top, /v1/stats and /dashboard)";
}

/** A listen that failed, said with its cause and what to do (EADDRINUSE, EACCES). */
async function listening<T>(started: Promise<T>, flag: string, port: number, hostname: string, hostFlag = "--host"): Promise<T> {
  try {
    return await started;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") throw new Error(`cannot listen on ${hostname}:${port}: EADDRINUSE, the port is in use (stop what listens there, or pass another ${flag})`);
    if (code === "EACCES") throw new Error(`cannot listen on ${hostname}:${port}: EACCES, ports below 1024 need privileges (pass ${flag} 1024 or above)`);
    if (code === "EADDRNOTAVAIL") throw new Error(`cannot listen on ${hostname}:${port}: EADDRNOTAVAIL, no interface has this address (check ${hostFlag})`);
    throw error;
  }
}
