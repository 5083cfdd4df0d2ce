import { createApp } from "../http/app.js";
import type { Env } from "./env.js";
import { serviceFor, tokenOf } from "./service.js";

export { LimiterObject } from "./limiter-object.js";
export { SpillwayRpc } from "./entrypoint.js";

export default {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> {
    return createApp({ service: serviceFor(env), tokenOf }).fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
