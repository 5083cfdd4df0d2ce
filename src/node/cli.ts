import { readFile } from "node:fs/promises";
import { type SpillwayConfig, parseConfig, parseConfigText, withDryRunEnv } from "../config.js";
import type { Limiter } from "../limiter.js";
import type { SpillwayObserver } from "../observe/observer.js";
import { overridesFor } from "../overrides/overrides.js";
import { ValidationError } from "../core/validation.js";
import { parseGatewayConfig } from "../gateway/config.js";
import { createNodeGateway } from "./gateway.js";
import { USAGE, parseCheckArgs, parseServeArgs } from "./cli-args.js";
import { initProject } from "./init.js";
import { loadRlsConfig } from "./rls-files.js";
import { prepareRls, serveRls } from "./rls-serve.js";
import { type NodeObservability, createNodeObservability, startMetricsServer } from "./observability.js";
import { type OriginAgents, originAgents } from "./origin-agents.js";
import { ConfigReloader, onHangup, registerReloadMetrics } from "./reload.js";
import type { RuntimeParts } from "./runtime.js";
import { type RunningServer, startServer } from "./server.js";
import { createStore } from "./stores.js";

/**
 * The `spillway` command: `serve` (the Node runtime), `init DIR` (a Worker project) and
 * `check --config FILE`. Exit codes: 0 after a clean shutdown or a valid config, 2 for bad
 * flags or config (the message names the field), 1 for anything else.
 */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--help" || command === "-h" || command === "help") {
    console.log(USAGE);
    return 0;
  }
  if (command === "check") return check(rest);
  if (command === "init") return init(rest);
  if (command !== "serve") {
    console.error(`spillway: unknown command ${JSON.stringify(command ?? "")}\n${USAGE}`);
    return 2;
  }
  // First: SIGHUP's default is to end the process, which must never happen to a server being reloaded.
  const reloads: Array<() => Promise<unknown>> = [];
  const offHangup = onHangup(reloads);
  try {
    const args = parseServeArgs(rest, process.env);
    // A rate limit service alone needs no spillway.config.json: no policies, no gateway.
    const startText = args.configPath ? await readConfig(args.configPath) : undefined;
    const config = startText !== undefined ? configOf(startText, args.configPath!) : parseConfig({ policies: [] });
    // Validate the gateway part before connecting anywhere: a bad config fails at once.
    const gateway = parseGatewayConfig(config);
    const rlsPrepared = args.rls ? await prepareRls(args.rls) : undefined;
    const limiter = await createStore(args.store);
    const observing = args.metrics ? createNodeObservability({ config, limiter }) : undefined;
    // One set of origin connection pools for every generation of the gateway.
    const serving: Serving = { limiter, observer: observing?.observer, agents: originAgents() };
    const parts = runtimePartsOf(config, serving, gateway);
    const server = await startServer({ ...parts, limiter: observing?.apiLimiter ?? limiter, port: args.port, hostname: args.hostname, observability: observing?.routes });
    const reloader = args.configPath && startText !== undefined ? configReloader(args.configPath, startText, serving, server, observing) : undefined;
    if (reloader) reloads.push(() => reloader.reload("signal"));
    if (reloader && observing) registerReloadMetrics(observing.prometheus.registry, reloader, () => server.generation);
    const stopWatching = args.watch ? reloader?.watch() : undefined;
    const metricsServer = observing && args.metricsPort !== undefined ? await startMetricsServer(observing.prometheus, args.metricsPort, args.hostname) : undefined;
    if (metricsServer) console.log(`spillway: metrics on ${metricsServer.url}/metrics (no token)`);
    const rls = args.rls && rlsPrepared ? await serveRls(args.rls, rlsPrepared, { limiter, hostname: args.hostname, registry: observing?.prometheus.registry }) : undefined;
    if (rls) reloads.push(() => rls.reload());
    if (rls) console.log(`spillway: rate limit service (gRPC${rlsPrepared?.tls ? " over TLS" : ""}) on ${rls.server.address}, ${rlsPrepared!.config.domains.size} domain(s) from ${args.rls!.configPath}`);
    if (!process.env.SPILLWAY_TOKEN) console.warn("spillway: SPILLWAY_TOKEN is not set: /v1 answers 503 until it is");
    console.log(`spillway: listening on ${server.url} (store: ${limiter.kind}${gateway ? `, gateway to ${gateway.origin}` : ""})`);
    await untilSignal();
    console.log("spillway: shutting down (letting in-flight requests finish)");
    stopWatching?.();
    await rls?.close(); // before the HTTP server closes the store under it
    await Promise.all([server.close(), metricsServer?.close()]);
    return 0;
  } catch (error) {
    if (error instanceof ValidationError) {
      console.error(`spillway: ${error.message}`);
      return 2;
    }
    console.error(`spillway: ${(error as Error).message}`);
    return 1;
  } finally {
    offHangup();
  }
}

/** What every generation of the runtime is built over: the store, the observer, the origin pools. */
interface Serving {
  limiter: Limiter;
  observer: SpillwayObserver | undefined;
  agents: OriginAgents;
}

/** A config file's text as `serve` reads it, at start and on every reload: strictly, SPILLWAY_DRY_RUN applied. */
function configOf(text: string, path: string): SpillwayConfig {
  return withDryRunEnv(parseConfigText(text, path), process.env.SPILLWAY_DRY_RUN);
}

/** The runtime parts of a config: one overrides cache for the API and the gateway, over the store's runtime table. */
function runtimePartsOf(config: SpillwayConfig, serving: Serving, gateway = parseGatewayConfig(config)): RuntimeParts {
  const overrides = overridesFor(config, serving.limiter);
  const fallback = createNodeGateway({ config, gateway, limiter: serving.limiter, observer: serving.observer, overrides, agents: serving.agents });
  return { config, fallback, overrides };
}

/** SIGHUP and --watch: the same parse and build as at start; the store, port and flags stay. */
function configReloader(path: string, startText: string, serving: Serving, server: RunningServer, observing: NodeObservability | undefined): ConfigReloader {
  return new ConfigReloader({
    path,
    startText,
    generation: () => server.generation,
    apply(text) {
      const parts = runtimePartsOf(configOf(text, path), serving);
      observing?.configure(parts.config);
      return server.reload(parts);
    },
  });
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

/** `spillway check --config FILE`: the same validation as serve and the Worker, nothing started. */
function check(argv: string[]): Promise<number> {
  return exitCodeOf(async () => {
    const { configPath, rlsConfigPath } = parseCheckArgs(argv);
    if (configPath) {
      const config = parseConfigText(await readConfig(configPath), configPath);
      const gateway = parseGatewayConfig(config);
      const routes = gateway ? `, ${gateway.routes.length} route(s) to ${gateway.origin.origin}` : "";
      console.log(`spillway: ${configPath} is valid (${config.policies.length} policies${routes})`);
    }
    if (rlsConfigPath) {
      const rls = await loadRlsConfig(rlsConfigPath);
      console.log(`spillway: ${rlsConfigPath} is valid (${rls.domains.size} domain(s): ${[...rls.domains.keys()].join(", ")})`);
    }
  });
}

/** `spillway init DIR`: scaffolds a Worker project that deploys its own spillway.config.json. */
function init(argv: string[]): Promise<number> {
  return exitCodeOf(async () => {
    if (argv.length !== 1 || argv[0]!.startsWith("-")) throw new ValidationError("DIR", "spillway init takes one directory: spillway init my-limiter");
    const dir = argv[0]!;
    const files = await initProject(dir);
    console.log(`spillway: wrote ${files.join(", ")} in ${dir}\nnext: cd ${dir} && npm install && npm start`);
  });
}

async function readConfig(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    throw new ValidationError("--config", `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGTERM", () => resolve());
    process.once("SIGINT", () => resolve());
  });
}
