import type { Hono } from "hono";
import { type SpillwayConfig, parseConfig, withDryRunEnv } from "../config/config.js";
import { Overrides, overrideTableOf } from "../overrides/overrides.js";
import { DurableObjectOverrideTable } from "../stores/durable-object-overrides.js";
import type { Limiter } from "../core/limiter.js";
import { ValidationError } from "../core/validation.js";
import type { GatewayConfig } from "../gateway/config.js";
import type { createGateway } from "../gateway/gateway.js";
import { createApp } from "../http/app.js";
import { SpillwayService } from "../service/service.js";
import { notifyingStore } from "./notify.js";
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
import { placedNamespace } from "./placement.js";
import { traceLimiter } from "../observe/traced-limiter.js";
import { tracedFetch, workerTracer } from "./tracing.js";

/** What `createWorker` (and `createApiWorker`) builds: the Worker's handler and its RPC entrypoint class. */
export interface SpillwayWorker {
  /** The Worker's fetch handler: the /v1 API, /healthz, and the gateway when the config has an `origin`. */
  fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response>;
  /** The service-binding RPC entrypoint, bound to this config: export it under the name your callers' bindings use. */
  Rpc: new (ctx: ExecutionContext, env: Env) => SpillwayEntrypoint;
  /** The validated config. */
  config: SpillwayConfig;
}

/** Options of `createWorker`. */
export interface CreateWorkerOptions {
  /**
   * Decide with this store instead of the `LIMITER` Durable Objects; called once per isolate
   * with the Worker's bindings. For a store of your own that is shared across isolates (a
   * `Limiter` over your database, say). A `MemoryStore` here counts per isolate: Cloudflare
   * runs many, so each would admit the full limit; only benchmarks and tests want that.
   */
  store?: (env: Env) => Limiter;
}

interface Built {
  service: SpillwayService;
  app: Hono;
}

/** The 404 of /metrics and /dashboard on the Worker: what serves them instead. */
const WORKER_UNOBSERVED = "/metrics and /dashboard are spillway serve's (Node); the Worker serves /v1/top and /v1/stats, and its metrics go to Analytics Engine (docs/observability.md)";

/**
 * The gateway's two entry points, handed in by createWorker (spillway/worker) and left out by
 * createApiWorker (spillway/worker/api): a Worker that imports neither bundles no gateway code.
 */
export interface GatewayKit {
  parse: (config: SpillwayConfig) => GatewayConfig | undefined;
  create: typeof createGateway;
}

/** createWorker's and createApiWorker's one body: `kit` undefined builds the /v1 API alone. */
export function buildWorker(input: unknown, options: CreateWorkerOptions, kit: GatewayKit | undefined): SpillwayWorker {
  const config = parseConfig(input);
  const storeOf = storeOption(options);
  if (!kit && config.gateway) {
    throw new ValidationError("origin", 'this Worker is built by createApiWorker (spillway/worker/api), which serves the /v1 API only: import createWorker from "spillway/worker" to serve an origin and routes');
  }
  const gateway = kit?.parse(config);
  // The runtime's tracer (Workers tracing), or none: then nothing is traced and nothing added per request.
  const tracer = workerTracer();
  // One service and app per LIMITER binding (stable for an isolate's life), or one in all with
  // the store option, built on first use: routing tables are not free, and bindings exist only
  // once a request brings `env`.
  const built = new WeakMap<object, Built>();
  const ownStore = {};
  const keyOf = (env: Env): object => (options.store ? ownStore : env.LIMITER);
  const builtFor = (env: Env): Built => {
    let found = built.get(keyOf(env));
    if (!found) {
      // The LocalCache lives as long as the isolate: policies with `local` are answered here
      // from its deny cache and token batches, in front of the key's Durable Object.
      const raw = storeOf(env, config);
      const store = traceLimiter(notifyingStore(new LocalCache(raw), config), tracer);
      const stats = new LiveStats(config.policies.map((policy) => policy.name));
      const observers: SpillwayObserver[] = [stats, logObserver(undefined, { denials: parseLogDenials(env.SPILLWAY_LOG_DENIALS) })];
      if (env.SPILLWAY_ANALYTICS) observers.push(analyticsObserver(env.SPILLWAY_ANALYTICS, parseSampleRate(env.SPILLWAY_ANALYTICS_SAMPLE_RATE)));
      const observer = combineObservers(observers);
      // Runtime overrides live in the OVERRIDES Durable Object (or a store option's own table);
      // this isolate reads them once per overridesTtl, shared by the /v1 API and the gateway.
      const table = env.OVERRIDES ? new DurableObjectOverrideTable(placedNamespace(env.OVERRIDES, config.durableObjects)) : options.store ? overrideTableOf(raw) : undefined;
      const overrides = new Overrides({ catalog: config.catalog, configured: config.overrides, table, ttlMs: config.overridesTtlMs, shareReads: false });
      const service = new SpillwayService(observeLimiter(store, observer, "api"), config, overrides);
      const dryRun = withDryRunEnv(config, env.SPILLWAY_DRY_RUN).dryRun;
      const fallback = gateway && kit ? kit.create({ config, gateway, limiter: store, clientIpOf: cloudflareClientIp, observer, overrides, dryRun, readOnCapMs: WORKER_READ_ON_CAP_MS, tracer }) : undefined;
      // /v1/top and /v1/stats per isolate. No /metrics (the Worker's is Analytics Engine) nor
      // /dashboard (its chart library would double the Worker's bundle).
      const app = createApp({ service, tokenOf: (env) => (env as Env).SPILLWAY_TOKEN, fallback, observability: { stats }, unobserved: WORKER_UNOBSERVED });
      found = { service, app };
      built.set(keyOf(env), found);
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
    fetch: async (request, env, ctx) => {
      // A request Workers tracing samples runs inside a span of Spillway's; any other as before.
      if (tracer?.sampled()) return tracedFetch(tracer, request, async () => builtFor(env).app.fetch(request, env, ctx));
      return builtFor(env).app.fetch(request, env, ctx);
    },
    Rpc: SpillwayRpc,
    config,
  };
}

/**
 * Cloudflare runs waitUntil work at most 30 s past the client's leaving, then cancels it: a
 * counted answer is read on for 25 s at most there, so that its debit (what was read, or
 * `missing`) lands before the platform's cut rather than never.
 */
const WORKER_READ_ON_CAP_MS = 25_000;

const LIMITER_METHODS = ["check", "peek", "reset", "acquire", "release", "extend", "health"] as const;

/** The store each isolate decides with: the option's, checked once, or the LIMITER binding's Durable Objects. */
function storeOption(options: CreateWorkerOptions): (env: Env, config: SpillwayConfig) => Limiter {
  if (options === null || typeof options !== "object") throw new ValidationError("createWorker options", "must be an object");
  const { store } = options;
  if (store === undefined) return (env, config) => new DurableObjectStore(placedNamespace(env.LIMITER, config.durableObjects));
  if (typeof store !== "function") throw new ValidationError("createWorker options.store", "must be a function (env) => Limiter");
  return (env) => {
    const limiter = store(env);
    const missing = LIMITER_METHODS.filter((method) => typeof (limiter as unknown as Record<string, unknown> | null)?.[method] !== "function");
    if (missing.length > 0) throw new ValidationError("createWorker options.store", `must return a Limiter; it has no ${missing.join(", ")}`);
    return limiter;
  };
}
