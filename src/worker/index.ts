import type { Hono } from "hono";
import { gatewayFor } from "../gateway/worker.js";
import { createApp } from "../http/app.js";
import type { Env } from "./env.js";
import { serviceFor, tokenOf } from "./service.js";

export { LimiterObject } from "./limiter-object.js";
export { SpillwayRpc } from "./entrypoint.js";

const apps = new WeakMap<object, Hono>();

/**
 * The app (the /v1 API, and the gateway when the config has routes) is built once per
 * binding, not per request: routing tables are not free.
 */
export function appFor(env: Env): Hono {
  let app = apps.get(env.LIMITER);
  if (!app) {
    app = createApp({ service: serviceFor(env), tokenOf, fallback: gatewayFor(env) });
    apps.set(env.LIMITER, app);
  }
  return app;
}

export default {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> {
    return appFor(env).fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
