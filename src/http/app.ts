import { type Context, Hono, type Next } from "hono";
import { type CanonicalPath, canonicalPath, isRefused, rawPathOf } from "./path.js";
import type { SpillwayService } from "../service/service.js";
import { createApi } from "./api.js";
import { type Observability, createObserveRoutes } from "./observe-routes.js";
import { onError, problem, problemResponse } from "./problems.js";

export interface AppOptions {
  service: SpillwayService;
  /** The expected bearer token for /v1, read per request from the runtime's env. */
  tokenOf: (env: unknown) => string | undefined;
  /** Mounted after /v1 and /healthz: the gateway, when the config has routes. */
  fallback?: Hono;
  /** /v1/top, /v1/stats, and on Node /metrics and /dashboard (absent: those paths are reserved, 404). */
  observability?: Observability;
  /**
   * Why /v1/top, /v1/stats, /metrics or /dashboard is not served, for their 404 (`spillway serve
   * runs with --no-metrics`); absent: "not served by this server".
   */
  unobserved?: string;
  /** Why /healthz must answer 503 whatever the store says (a worker of `spillway serve --workers` starting); undefined: ready. */
  notReady?: () => string | undefined;
}

/**
 * Spillway's own paths and the methods each answers (README "HTTP API"; /v1/top, /v1/stats, /metrics and
 * /dashboard are served when the runtime observes, else 404). However they are spelled, they never reach a gateway's origin: the client's
 * Authorization there carries SPILLWAY_TOKEN.
 */
const OWN_PATHS: ReadonlyMap<string, readonly string[]> = new Map([
  ["/healthz", ["GET", "HEAD"]],
  ["/v1/check", ["POST"]],
  ["/v1/peek", ["POST"]],
  ["/v1/reset", ["POST"]],
  ["/v1/acquire", ["POST"]],
  ["/v1/release", ["POST"]],
  ["/v1/extend", ["POST"]],
  ["/v1/credits", ["POST"]],
  ["/v1/overrides", ["GET", "HEAD", "PUT", "DELETE"]],
  ["/v1/top", ["GET", "HEAD"]],
  ["/v1/stats", ["GET", "HEAD"]],
  ["/metrics", ["GET", "HEAD"]],
  ["/dashboard", ["GET", "HEAD"]],
]);
const RESERVED_PATHS = new Set(["/v1/top", "/v1/stats", "/metrics", "/dashboard"]);

/**
 * Whether a path is Spillway's to answer rather than a gateway's to forward outright: any
 * spelling of an own path, and everything under /v1 (whose unknown paths the app still hands
 * to the gateway). The Node server sends these to the app, the rest to its gateway edge.
 */
export function isSpillwayPath(path: CanonicalPath): boolean {
  const lower = path.lowerSegments;
  return lower[0] === "v1" || OWN_PATHS.has(`/${lower.join("/")}`);
}

/**
 * Runs after Spillway's own handlers and before the gateway, for what they did not answer:
 * a wrong method on an own path is a 405 with Allow, and another spelling of one (`/V1/check`,
 * `/v1//check`, `/v1/check;x`, folded as the gateway folds paths) a 404 naming the path.
 */
function ownPathGuard(unobserved: string | undefined) {
  return async (c: Context, next: Next): Promise<Response | void> => {
    const path = canonicalPath(rawPathOf(c.req.url));
    // A path with no canonical form is no own path: the gateway refuses it (400), else 404.
    const own = isRefused(path) ? undefined : `/${path.lowerSegments.join("/")}`;
    const methods = own === undefined ? undefined : OWN_PATHS.get(own);
    if (!own || !methods) return next();
    if (!methods.includes(c.req.method)) {
      return problemResponse(problem(405, `${own} is Spillway's own path and answers ${methods.join(" and ")} only, not ${c.req.method}`), { allow: methods.join(", ") });
    }
    if (RESERVED_PATHS.has(own)) return problemResponse(problem(404, `${own} is not served here: ${unobserved ?? "this server was started without it"}`));
    return problemResponse(problem(404, `no route for ${c.req.method} ${rawPathOf(c.req.url)}: Spillway's own path is spelled exactly ${own}`));
  };
}

/**
 * The 404 for `/` without a gateway: a newcomer's first request (a browser, `curl URL`) learns
 * where the API is instead of only that nothing is here.
 */
const ROOT_HINT = "this is Spillway's API, not a page: ask with POST /v1/check {\"key\":\"alice\",\"policy\":\"NAME\"} and Authorization: Bearer $SPILLWAY_TOKEN; GET /healthz needs no token (docs/http-api.md)";

/**
 * The one Hono app served by the Worker and by `spillway serve`: the /v1 decision API,
 * /healthz, and (optionally) the gateway for everything else.
 *
 * @example export default { fetch: createApp({ service, tokenOf: (env) => env.SPILLWAY_TOKEN }).fetch }
 */
export function createApp({ service, tokenOf, fallback, observability, notReady, unobserved }: AppOptions): Hono {
  const app = new Hono();
  app.onError(onError);
  // 503 while the store is unreachable or refuses writes (out of memory, a read-only replica,
  // auth): what every decision would meet. The store's probe decides (Limiter.health).
  app.get("/healthz", async (c) => {
    const starting = notReady?.();
    if (starting !== undefined) return c.json({ ok: false, store: service.limiter.kind, error: starting }, 503, { "cache-control": "no-store" });
    const health = await service.limiter.health().catch((error: unknown) => ({ ok: false, store: service.limiter.kind, detail: (error as Error).message }));
    if (health.ok) return c.json({ ok: true, store: health.store }, 200, { "cache-control": "no-store" });
    return c.json({ ok: false, store: health.store, error: health.detail ?? "the store is unhealthy" }, 503, { "cache-control": "no-store" });
  });
  app.route("/v1", createApi({ service, tokenOf }));
  if (observability) app.route("/", createObserveRoutes(observability, service.limiter, tokenOf));
  app.all("*", ownPathGuard(observability ? (unobserved ?? "this runtime serves /v1/top and /v1/stats only") : unobserved));
  if (fallback) app.route("/", fallback);
  app.notFound((c) => {
    const path = new URL(c.req.url).pathname;
    return problemResponse(problem(404, `no route for ${c.req.method} ${path}${path === "/" ? `: ${ROOT_HINT}` : ""}`));
  });
  return app;
}
