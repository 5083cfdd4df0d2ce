// bench:llm only: the Spillway Worker (createWorker, the real LimiterObject with its calls
// counted: storage-probe.ts) under `wrangler dev`, built from bench:llm's config on the first
// request (the origin's URL comes from `--var ORIGIN_URL`). GET /__meter?key=K answers what
// the key's object was asked (meter()): the bench's object requests per gateway request.
import { type SpillwayWorker, createWorker } from "../../src/worker/index.js";
import { llmConfig } from "./llm-config.js";
import type { MeteredLimiterObject } from "./storage-probe.js";

export { MeteredLimiterObject } from "./storage-probe.js";

type BenchEnv = Parameters<SpillwayWorker["fetch"]>[1] & { ORIGIN_URL: string };
let worker: SpillwayWorker | undefined;

export default {
  async fetch(request: Request, env: BenchEnv, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/__meter") {
      const limiters = env.LIMITER as unknown as DurableObjectNamespace<MeteredLimiterObject>;
      return Response.json(await limiters.getByName(url.searchParams.get("key") ?? "").meter());
    }
    worker ??= createWorker(llmConfig(env.ORIGIN_URL));
    return worker.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<BenchEnv>;
