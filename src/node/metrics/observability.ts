// node/metrics: the observability port: Prometheus series and histograms, the dashboard.
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import type { SpillwayConfig } from "../../config/config.js";
import { ORIGIN_PAUSE_POLICY } from "../../gateway/config.js";
import type { Observability } from "../../http/observe-routes.js";
import type { Limiter } from "../../core/limiter.js";
import { LiveStats } from "../../observe/live-stats.js";
import { type LogSink, logObserver } from "../../observe/log-lines.js";
import { observeLimiter } from "../../observe/observed-limiter.js";
import { type SpillwayObserver, combineObservers } from "../../observe/observer.js";
import { dashboardHtml } from "./dashboard.js";
import { PrometheusObserver } from "./prometheus.js";

/** What `spillway serve` observes with, built once per server. */
export interface NodeObservability {
  /** Feeds Prometheus, the live stats, the sketch and the log lines. */
  observer: SpillwayObserver;
  /** The store as the /v1 API sees it: observed under source `api`. */
  apiLimiter: Limiter;
  /** For createApp: /v1/top, /v1/stats, /metrics, /dashboard. */
  routes: Observability;
  prometheus: PrometheusObserver;
  /** A reload's config: its policies get their own series (a removed one keeps its counts). */
  configure(config: SpillwayConfig): void;
}

/**
 * Metrics, the heavy-hitters sketch, the dashboard and the structured log lines of denials,
 * fail-opens and store errors for `spillway serve` (all off with --no-metrics).
 *
 * @example const observing = createNodeObservability({ config, limiter }); startServer({ config, limiter: observing.apiLimiter, observability: observing.routes, … })
 */
export function createNodeObservability(options: { config: SpillwayConfig; limiter: Limiter; log?: LogSink }): NodeObservability {
  const stats = new LiveStats(policyNamesOf(options.config));
  const prometheus = new PrometheusObserver(options.limiter, stats, concurrencyNamesOf(options.config));
  const observer = combineObservers([prometheus, stats, logObserver(options.log)]);
  return {
    observer,
    apiLimiter: observeLimiter(options.limiter, observer, "api"),
    routes: { stats, metrics: () => prometheus.scrape(), dashboardHtml },
    prometheus,
    configure(config) {
      stats.addPolicies(policyNamesOf(config));
      prometheus.addConcurrencyPolicies(concurrencyNamesOf(config));
    },
  };
}

/** The config's policies, and the gateway's own origin-feedback pause: every other name is `inline`. */
function policyNamesOf(config: SpillwayConfig): string[] {
  const names = config.policies.map((policy) => policy.name);
  if (config.gateway?.originFeedback) names.push(ORIGIN_PAUSE_POLICY);
  return names;
}

const concurrencyNamesOf = (config: SpillwayConfig) => config.policies.filter((policy) => policy.algorithm === "concurrency").map((policy) => policy.name);

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** `--metrics-port N`: /metrics alone, without the token, for a scraper on a private network. */
export function startMetricsServer(prometheus: Pick<PrometheusObserver, "scrape">, port: number, hostname: string): Promise<MetricsServer> {
  const app = new Hono();
  app.get("/metrics", async () => {
    const { contentType, body } = await prometheus.scrape();
    return new Response(body, { headers: { "content-type": contentType } });
  });
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port, hostname }, (info: AddressInfo) => {
      const host = hostname.includes(":") ? `[${hostname}]` : hostname;
      resolve({
        url: `http://${host}:${info.port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          }),
      });
    });
    server.once("error", reject);
  });
}
