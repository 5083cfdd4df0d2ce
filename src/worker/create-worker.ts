import type { Hono } from "hono";
import { type SpillwayConfig, parseConfig } from "../config.js";
import { parseGatewayConfig } from "../gateway/config.js";
import { createGateway } from "../gateway/gateway.js";
import { createApp } from "../http/app.js";
import { SpillwayService } from "../service.js";
import { LocalCache } from "../local/local-cache.js";
import { LiveStats } from "../observe/live-stats.js";
import { logObserver } from "../observe/log-lines.js";
import { observeLimiter } from "../observe/observed-limiter.js";
import { type SpillwayObserver, combineObservers } from "../observe/observer.js";
import { DurableObjectStore } from "../stores/durable-object.js";
import { analyticsObserver, parseLogDenials, parseSampleRate } from "./analytics.js";
import { cloudflareClientIp } from "./client-ip.js";
import { SpillwayEntrypoint } from "./entrypoint.js";
import type { Env } from "./env.js";

/** What `createWorker` builds: the Worker's handler and its RPC entrypoint class. */
export interface SpillwayWorker {
  /** The Worker's fetch handler: the /v1 API, /healthz, and the gateway when the config has an `origin`. */
  fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response>;
  /** The service-binding RPC entrypoint, bound to this config: export it under the name your callers' bindings use. */
  Rpc: new (ctx: ExecutionContext, env: Env) => SpillwayEntrypoint;
  /** The validated config. */
  config: SpillwayConfig;
}

interface Built {
  service: SpillwayService;
  app: Hono;
}

/**
 * Builds the Spillway Worker from your config (the parsed contents of spillway.config.json).
 * The config is validated here, when the Worker loads: a bad one throws a ValidationError
 * naming the field (`spillway check --config FILE` finds the same error before a deploy).
 *
 * @example
 * import { createWorker, LimiterObject } from "spillway/worker";
 * import config from "../spillway.config.json";
 *
 * const spillway = createWorker(config);
 * export { LimiterObject };
 * export const SpillwayRpc = spillway.Rpc;
 * export default { fetch: spillway.fetch };
 */
export function createWorker(input: unknown): SpillwayWorker {
  const config = parseConfig(input);
  const gateway = parseGatewayConfig(config);
  // One service and app per LIMITER binding (stable for an isolate's life), built on first use:
  // routing tables are not free, and bindings exist only once a request brings `env`.
  const built = new WeakMap<object, Built>();
  const builtFor = (env: Env): Built => {
    let found = built.get(env.LIMITER);
    if (!found) {
      // The LocalCache lives as long as the isolate: policies with `local` are answered here
      // from its deny cache and token batches, in front of the key's Durable Object.
      const store = new LocalCache(new DurableObjectStore(env.LIMITER));
      const stats = new LiveStats(config.policies.map((policy) => policy.name));
      const observers: SpillwayObserver[] = [stats, logObserver(undefined, { denials: parseLogDenials(env.SPILLWAY_LOG_DENIALS) })];
      if (env.SPILLWAY_ANALYTICS) observers.push(analyticsObserver(env.SPILLWAY_ANALYTICS, parseSampleRate(env.SPILLWAY_ANALYTICS_SAMPLE_RATE)));
      const observer = combineObservers(observers);
      const service = new SpillwayService(observeLimiter(store, observer, "api"), config);
      const fallback = gateway ? createGateway({ config, gateway, limiter: store, clientIpOf: cloudflareClientIp, observer }) : undefined;
      // /v1/top and /v1/stats per isolate. No /metrics (the Worker's is Analytics Engine) nor
      // /dashboard (its chart library would double the Worker's bundle).
      const app = createApp({ service, tokenOf: (env) => (env as Env).SPILLWAY_TOKEN, fallback, observability: { stats } });
      found = { service, app };
      built.set(env.LIMITER, found);
    }
    return found;
  };

  class SpillwayRpc extends SpillwayEntrypoint {
    override async fetch(request: Request): Promise<Response> {
      // `fetch` over the binding reaches the same HTTP app (and so needs the token).
      return builtFor(this.env).app.fetch(request, this.env, this.ctx);
    }

    protected service(): SpillwayService {
      return builtFor(this.env).service;
    }
  }

  return {
    fetch: async (request, env, ctx) => builtFor(env).app.fetch(request, env, ctx),
    Rpc: SpillwayRpc,
    config,
  };
}
