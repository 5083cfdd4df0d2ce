// bench:gateway only: the Spillway Worker (Durable Object per key, the real LimiterObject)
// with a benchmark gateway config instead of the bundled one, whose demo limits would turn
// a load test into a 429 test. ORIGIN_URL comes from `--var`.
import type { Hono } from "hono";
import { parseConfig } from "../../src/config.js";
import { createGateway } from "../../src/gateway/gateway.js";
import { cloudflareClientIp } from "../../src/worker/client-ip.js";
import { createApp } from "../../src/http/app.js";
import { SpillwayService } from "../../src/service.js";
import { DurableObjectStore } from "../../src/stores/durable-object.js";
import type { Env } from "../../src/worker/env.js";

export { LimiterObject } from "../../src/worker/limiter-object.js";

type BenchEnv = Env & { ORIGIN_URL: string };
let app: Hono | undefined;

function appFor(env: BenchEnv): Hono {
  if (!app) {
    const config = parseConfig({
      origin: env.ORIGIN_URL,
      policies: [{ name: "bench", algorithm: "gcra", limit: 1_000_000_000, period: "1s" }],
      routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["bench"] }],
    });
    const limiter = new DurableObjectStore(env.LIMITER);
    const fallback = createGateway({ config, limiter, clientIpOf: cloudflareClientIp });
    app = createApp({ service: new SpillwayService(limiter, config), tokenOf: () => env.SPILLWAY_TOKEN, fallback });
  }
  return app;
}

export default {
  fetch: (request: Request, env: BenchEnv, ctx: ExecutionContext) => appFor(env).fetch(request, env, ctx),
} satisfies ExportedHandler<BenchEnv>;
