import { Hono } from "hono";
import type { SpillwayService } from "../service.js";
import { createApi } from "./api.js";
import { onError, problem, problemResponse } from "./problems.js";

export interface AppOptions {
  service: SpillwayService;
  /** The expected bearer token for /v1, read per request from the runtime's env. */
  tokenOf: (env: unknown) => string | undefined;
  /** Mounted after /v1 and /healthz: the gateway, when the config has routes. */
  fallback?: Hono;
}

/**
 * The one Hono app served by the Worker and by `spillway serve`: the /v1 decision API,
 * /healthz, and (optionally) the gateway for everything else.
 *
 * @example export default { fetch: createApp({ service, tokenOf: (env) => env.SPILLWAY_TOKEN }).fetch }
 */
export function createApp({ service, tokenOf, fallback }: AppOptions): Hono {
  const app = new Hono();
  app.onError(onError);
  app.get("/healthz", async (c) => {
    const health = await service.limiter.health();
    return c.json({ ok: health.ok, store: health.store, ...(health.detail ? { detail: health.detail } : {}) }, health.ok ? 200 : 503);
  });
  app.route("/v1", createApi({ service, tokenOf }));
  if (fallback) app.route("/", fallback);
  app.notFound((c) => problemResponse(problem(404, `no route for ${c.req.method} ${new URL(c.req.url).pathname}`)));
  return app;
}
