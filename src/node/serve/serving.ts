import { type SpillwayConfig, parseConfigText, withDryRunEnv } from "../../config/config.js";
import { parseGatewayConfig } from "../../gateway/config.js";
import type { Limiter } from "../../core/limiter.js";
import type { SpillwayObserver } from "../../observe/observer.js";
import { overridesFor } from "../../overrides/overrides.js";
import { createNodeGateway } from "../http/gateway.js";
import type { NodeObservability } from "../metrics/observability.js";
import type { OriginAgents } from "../http/origin-agents.js";
import type { LogSink } from "../../observe/log-lines.js";
import { ConfigReloader, policiesStartingFresh } from "./reload.js";
import type { RuntimeParts } from "./runtime.js";
import type { RunningServer } from "./server.js";

/** What every generation of `spillway serve`'s runtime is built over: the store, the observer, the origin pools. */
export interface Serving {
  limiter: Limiter;
  observer: SpillwayObserver | undefined;
  agents: OriginAgents;
  /** Told of every config that takes effect (a reload's): what lives beside the server follows it. */
  configured?: (config: SpillwayConfig) => void;
}

/** A config file's text as `serve` reads it, at start and on every reload: strictly, SPILLWAY_DRY_RUN applied. */
export function configOf(text: string, path: string): SpillwayConfig {
  return withDryRunEnv(parseConfigText(text, path), process.env.SPILLWAY_DRY_RUN);
}

/** The runtime parts of a config: one overrides cache for the API and the gateway, over the store's runtime table. */
export function runtimePartsOf(config: SpillwayConfig, serving: Serving, gateway = parseGatewayConfig(config)): RuntimeParts {
  const overrides = overridesFor(config, serving.limiter);
  const fallback = createNodeGateway({ config, gateway, limiter: serving.limiter, observer: serving.observer, overrides, agents: serving.agents });
  return { config, fallback, overrides };
}

/**
 * SIGHUP and --watch: the same parse and build as at start; the store, ports and flags stay.
 * A policy that keeps its name with another algorithm is named in the reload's log line: its
 * keys start fresh (reload.ts, FreshPolicy).
 */
export function configReloader(path: string, startText: string, serving: Serving, server: RunningServer, observing: NodeObservability | undefined, log?: LogSink): ConfigReloader {
  // The policies in force, to compare each reloaded file with (the start file parsed once more on the first reload).
  let inForce: SpillwayConfig["policies"] | undefined;
  return new ConfigReloader({
    path,
    startText,
    ...(log ? { log } : {}),
    generation: () => server.generation,
    apply(text) {
      const parts = runtimePartsOf(configOf(text, path), serving);
      const before = inForce ?? configOf(startText, path).policies;
      observing?.configure(parts.config);
      const generation = server.reload(parts);
      serving.configured?.(parts.config);
      inForce = parts.config.policies;
      return { generation, startFresh: policiesStartingFresh(before, inForce) };
    },
  });
}
