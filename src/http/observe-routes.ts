import { Hono } from "hono";
import type { Limiter } from "../core/limiter.js";
import type { LiveStats } from "../observe/live-stats.js";
import { bearerAuth } from "./auth.js";
import { problem, problemResponse } from "./problems.js";

/** What a runtime serves to see the limiter: all optional but `stats`. */
export interface Observability {
  stats: LiveStats;
  /** The Prometheus exposition (Node): served at /metrics behind the token. */
  metrics?: () => Promise<{ contentType: string; body: string }>;
  /** The dashboard page (Node): served at /dashboard; the page asks for the token itself. */
  dashboardHtml?: () => string;
}

const TOP_LIMIT_MAX = 100;

/** `?limit=` of /v1/top: 1 … 100, default 20; anything else is a 400 naming it. */
function topLimitOf(value: string | undefined): number | Response {
  if (value === undefined) return 20;
  const limit = Number(value);
  if (!/^\d+$/.test(value) || limit < 1 || limit > TOP_LIMIT_MAX) {
    return problemResponse(problem(400, `limit must be an integer from 1 to ${TOP_LIMIT_MAX}, got ${JSON.stringify(value)}`));
  }
  return limit;
}

/**
 * GET /v1/top (the most denied keys), GET /v1/stats (the dashboard's numbers), and, when the
 * runtime provides them, GET /metrics and GET /dashboard. Everything but the page needs the token.
 */
export function createObserveRoutes(observability: Observability, limiter: Limiter, tokenOf: (env: unknown) => string | undefined): Hono {
  const app = new Hono();
  const auth = bearerAuth((c) => tokenOf(c.env));
  app.get("/v1/top", auth, (c) => {
    const limit = topLimitOf(c.req.query("limit"));
    if (limit instanceof Response) return limit;
    return c.json({ top: observability.stats.top(limit) });
  });
  app.get("/v1/stats", auth, async (c) => c.json(observability.stats.snapshot(await limiter.health())));
  const { metrics, dashboardHtml } = observability;
  if (metrics) {
    app.get("/metrics", auth, async () => {
      const { contentType, body } = await metrics();
      return new Response(body, { headers: { "content-type": contentType } });
    });
  }
  if (dashboardHtml) {
    app.get("/dashboard", (c) => c.html(dashboardHtml(), 200, { "cache-control": "no-store", "content-security-policy": "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:" }));
  }
  return app;
}
