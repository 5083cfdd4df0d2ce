// node/cli: the `spillway` command (serve, check, rls, init), its help and exit codes; the
// scaffold `init` writes and the JSON schema writer live beside it.
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { parseConfig, parseConfigText } from "../../config/config.js";
import { ValidationError } from "../../core/validation.js";
import { parseGatewayConfig } from "../../gateway/config.js";
import { CHECK_USAGE, INIT_USAGE, RLS_COMMAND_USAGE, SERVE_USAGE, parseCheckArgs, parseServeArgs } from "../args/serve.js";
import { initProject } from "./init.js";
import { loadRlsConfig } from "../grpc/files.js";
import { serveNotify } from "../serve/notify.js";
import { originAgents } from "../http/origin-agents.js";
import { onHangup } from "../serve/reload.js";
import { type Serving, configOf, configReloader, runtimePartsOf } from "../serve/serving.js";
import { startServer } from "../serve/server.js";
import type { Limiter } from "../../core/limiter.js";
import { createStore } from "../serve/stores.js";
import cluster from "node:cluster";
import { type WorkerLink, linkToPrimary } from "../cluster/worker-link.js";
import { runPrimary } from "../cluster/primary.js";
import { MissingPackageError, importNeeding, isMissingPackage } from "./optional-packages.js";

/** One `spillway` command: its usage (`spillway COMMAND --help`), its one-line summary, its body. */
export interface CliCommand {
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

/**
 * Every command, in the order `spillway --help` lists them. A command added here gets its
 * `--help` and its line in the overview from its own usage text.
 */
export const COMMANDS: Record<string, CliCommand> = {
  serve: { summary: "the HTTP API, the gateway and Envoy's rate limit service on Node", usage: SERVE_USAGE, run: serve },
  check: { summary: "validate a config, start nothing", usage: CHECK_USAGE, run: check },
  init: { summary: "scaffold a Cloudflare Worker project", usage: INIT_USAGE, run: init },
  rls: { summary: "envoyproxy/ratelimit's service, configured by its environment variables", usage: RLS_COMMAND_USAGE, run: rls },
};

const HELP_FLAGS = new Set(["--help", "-h"]);

/** `spillway --help`: each command's summary, then how to get its own usage. */
export function overview(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, command]) => `  spillway ${name.padEnd(width)}  ${command.summary}`);
  return `spillway ${version()}: rate limiting for Node and Cloudflare Workers\n\nusage: spillway COMMAND [flags]\n\n${lines.join("\n")}\n\n  spillway COMMAND --help   that command's flags\n  spillway --version        the installed version\n\ndocs: node_modules/spillway/docs/ (serve.md, config.md, envoy.md, …)`;
}

/** The package's version, from its own package.json (dist/node/cli/ and src/node/cli/ are both three levels down). */
export function version(): string {
  return (JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

/**
 * The `spillway` command: `serve` (the Node runtime), `init DIR` (a Worker project) and
 * `check --config FILE`; `--help` and `--version`. Exit codes: 0 after a clean shutdown, a
 * valid config or help, 2 for bad flags or config (the message names the field), 1 for
 * anything else.
 */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    console.error(overview());
    return 2;
  }
  if (HELP_FLAGS.has(name) || (name === "help" && rest.length === 0)) {
    console.log(overview());
    return 0;
  }
  if (name === "--version" || name === "-v" || name === "version") {
    console.log(version());
    return 0;
  }
  if (name === "help") {
    const asked = COMMANDS[rest[0]!];
    if (asked) console.log(asked.usage);
    else console.error(`spillway: no command ${JSON.stringify(rest[0])}\n\n${overview()}`);
    return asked ? 0 : 2;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    console.error(`spillway: unknown command ${JSON.stringify(name)}\n\n${overview()}`);
    return 2;
  }
  // `spillway serve --config x --help` is a question, not a start.
  if (rest.some((arg) => HELP_FLAGS.has(arg))) {
    console.log(command.usage);
    return 0;
  }
  return command.run(rest);
}

/** `spillway serve`: exit 0 after a signal's clean shutdown, 2 for bad flags or config, 1 for anything else. */
async function serve(argv: string[]): Promise<number> {
  if (cluster.isPrimary && argv.some((arg) => arg === "--workers" || arg.startsWith("--workers="))) return servePrimary(argv);
  // A worker of --workers N: the primary prints its startup lines once for all, and stops it.
  const worker = cluster.isWorker ? linkToPrimary() : undefined;
  const startupLines: string[] = [];
  const say = (line: string, warn = false) => (worker ? startupLines.push(line) : warn ? console.warn(line) : console.log(line));
  let limiter: Limiter | undefined;
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
    const rlsPrepared = args.rls ? await rlsModule!.prepareRls(args.rls) : undefined;
    const metrics = args.metrics ? await metricsModules() : undefined;
    const notices = serveNotify(await createStore(args.store), config);
    limiter = notices.limiter;
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
    await rls?.close(); // before the HTTP server closes the store under it
    await Promise.all([server.close(), metricsServer?.close()]);
    notices.close();
    return 0;
  } catch (error) {
    // Whatever failed, nothing may keep the process alive (a Redis client reconnecting forever).
    await limiter?.close?.().catch(() => {});
    console.error(`spillway: ${(error as Error).message}`);
    return error instanceof ValidationError || error instanceof MissingPackageError ? 2 : 1;
  } finally {
    offHangup();
  }
}

/** What `spillway rls` loads: gRPC, its metrics and its Redis client. */
const RLS_COMMAND_PACKAGES = ["@grpc/grpc-js", "@grpc/proto-loader", "prom-client", "ioredis"];

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

/** Runs a command body, mapping a ValidationError to exit status 2 and its message. */
async function exitCodeOf(run: () => Promise<void>): Promise<number> {
  try {
    await run();
    return 0;
  } catch (error) {
    console.error(`spillway: ${(error as Error).message}`);
    return error instanceof ValidationError ? 2 : 1;
  }
}

/**
 * `spillway rls`: envoyproxy/ratelimit's service, configured by the reference's environment
 * alone (docs/envoy.md, "spillway rls"). Exit 0 after a signal's clean shutdown, 2 for a bad
 * variable or config file (the message names it), 1 for anything else. SIGHUP re-reads the files.
 */
async function rls(argv: string[]): Promise<number> {
  if (argv.length > 0) {
    console.error(`spillway: rls takes no arguments: it is configured by envoyproxy/ratelimit's environment variables (REDIS_URL, RUNTIME_ROOT, GRPC_PORT …), got ${JSON.stringify(argv[0])}; spillway rls --help says more`);
    return 2;
  }
  const stopSignal = untilStopSignal();
  const reloads: Array<() => Promise<unknown>> = [];
  const offHangup = onHangup(reloads);
  try {
    // Loaded only for this command: its optional packages (optional-packages.ts) must be installed.
    const { startRlsCommand } = await importNeeding(() => import("../grpc/command.js"), RLS_COMMAND_PACKAGES, "the rls command");
    const running = await startRlsCommand(process.env);
    reloads.push(() => running.reload());
    await stopSignal;
    await running.close();
    return 0;
  } catch (error) {
    console.error(`spillway: ${(error as Error).message}`);
    return error instanceof ValidationError || error instanceof MissingPackageError ? 2 : 1;
  } finally {
    offHangup();
  }
}

/** `spillway check --config FILE`: the same validation as serve and the Worker, nothing started. */
function check(argv: string[]): Promise<number> {
  return exitCodeOf(async () => {
    const { configPath, rlsConfigPath } = parseCheckArgs(argv);
    if (configPath) {
      const config = parseConfigText(await readConfig(configPath), configPath);
      const gateway = parseGatewayConfig(config);
      const routes = gateway ? `, ${counted(gateway.routes.length, "route")} to ${gateway.origin.origin}` : "";
      console.log(`spillway: ${configPath} is valid (${counted(config.policies.length, "policy", "policies")}${routes})`);
    }
    if (rlsConfigPath) {
      const rls = await loadRlsConfig(rlsConfigPath);
      console.log(`spillway: ${rlsConfigPath} is valid (${counted(rls.domains.size, "domain")}: ${[...rls.domains.keys()].join(", ")})`);
    }
  });
}

/** `1 policy`, `2 policies`, `0 routes`. */
export function counted(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/** `spillway init DIR`: scaffolds a Worker project that deploys its own spillway.config.json. */
function init(argv: string[]): Promise<number> {
  return exitCodeOf(async () => {
    if (argv.length !== 1 || argv[0]!.startsWith("-")) throw new ValidationError(argv.find((arg) => arg.startsWith("-")) ?? "DIR", "spillway init takes one directory and no flags: spillway init my-limiter; spillway init --help says more");
    const dir = argv[0]!;
    const files = await initProject(dir);
    console.log(`spillway: wrote ${files.join(", ")} in ${dir}\nnext: cd ${dir} && npm install && npm start   (its npm scripts run on the Node it pins, whatever node is on your PATH)`);
  });
}

async function readConfig(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "ENOENT, no such file (spillway init writes one; or pass --config PATH)" : code === "EISDIR" ? "EISDIR, a directory (pass the file)" : (code ?? (error as Error).message);
    throw new ValidationError("--config", `cannot read ${path}: ${why}`);
  }
}

/**
 * Resolves on the first SIGTERM or SIGINT: the server then shuts down gracefully. A second
 * signal while shutting down stops at once (exit 130). SIGHUP is a reload (reload.ts, onHangup).
 *
 * Started through npm (`npx spillway serve`, `npm run serve`), this process is the child of a
 * shell that npm spawned: npm passes a SIGTERM on to that shell, which dies without passing it
 * on, and the server would live on as an orphan. So under npm, losing the parent is a stop too.
 */
function untilStopSignal(worker?: WorkerLink): Promise<void> {
  return new Promise((resolve) => {
    const parent = process.ppid;
    const orphaned = process.env.npm_command && !worker ? setInterval(() => process.ppid !== parent && stop(), 500).unref() : undefined;
    let stopping = false;
    const stop = () => {
      // A worker hears a terminal's Ctrl-C and then its primary's word: one stop, not two.
      if (stopping) return;
      stopping = true;
      clearInterval(orphaned);
      process.off("SIGTERM", stop).off("SIGINT", stop);
      process.once("SIGTERM", () => process.exit(130)).once("SIGINT", () => process.exit(130));
      resolve();
    };
    process.on("SIGTERM", stop).on("SIGINT", stop);
    // The primary's stop (worker-link.ts), before or after the server is up.
    worker?.handle({ stop });
  });
}

/**
 * `spillway serve --workers N` in the primary: everything checked here first (flags, config,
 * RLS files: a mistake exits 2 once, before any worker starts), then runPrimary (workers.ts).
 */
async function servePrimary(argv: string[]): Promise<number> {
  // SIGHUP's default ends the process: ignored until runPrimary takes it.
  const ignoreHangup = () => {};
  process.on("SIGHUP", ignoreHangup);
  try {
    const args = parseServeArgs(argv, process.env);
    const startText = args.configPath ? await readConfig(args.configPath) : undefined;
    if (startText !== undefined) parseGatewayConfig(configOf(startText, args.configPath!));
    if (args.rls) await (await importRls()).prepareRls(args.rls);
    return await runPrimary({ ...args, workers: args.workers! }, startText);
  } catch (error) {
    console.error(`spillway: ${(error as Error).message}`);
    return error instanceof ValidationError || error instanceof MissingPackageError ? 2 : 1;
  } finally {
    process.off("SIGHUP", ignoreHangup);
  }
}