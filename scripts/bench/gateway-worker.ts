// bench:gateway only: the Spillway Worker (a Durable Object per key, the real LimiterObject),
// built with createWorker as a user builds theirs, from a benchmark gateway config instead of
// the repository's (whose demo limits would turn a load test into a 429 test). The origin's
// URL comes from `--var ORIGIN_URL`, so the Worker is built on the first request.
import { LimiterObject, type SpillwayWorker, createWorker } from "../../src/worker/index.js";

export { LimiterObject };

type BenchEnv = Parameters<SpillwayWorker["fetch"]>[1] & { ORIGIN_URL: string };
let worker: SpillwayWorker | undefined;

export default {
  fetch(request: Request, env: BenchEnv, ctx: ExecutionContext): Promise<Response> {
    worker ??= createWorker({
      origin: env.ORIGIN_URL,
      policies: [{ name: "bench", algorithm: "gcra", limit: 1_000_000_000, period: "1s" }],
      routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["bench"] }],
    });
    return worker.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<BenchEnv>;
