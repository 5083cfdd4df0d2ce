import { createExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/worker/env.js";
import { createWorker } from "../../src/worker/index.js";
import { TOKEN, checkWith, post, uniqueKey } from "./helpers.js";

const config = { policies: [{ name: "two-per-hour", algorithm: "fixed-window", limit: 2, period: "1h" }] };

/** The dataset's one method, recording what the Worker writes (Cloudflare's side is not under test). */
function recordingDataset() {
  const points: AnalyticsEngineDataPoint[] = [];
  return { points, dataset: { writeDataPoint: (point?: AnalyticsEngineDataPoint) => void points.push(point!) } as AnalyticsEngineDataset };
}

function check(worker: ReturnType<typeof createWorker>, workerEnv: Env, key: string): Promise<Response> {
  return checkWith(worker, workerEnv, key, "two-per-hour");
}

describe("Analytics Engine (SPILLWAY_ANALYTICS)", () => {
  it("writes one data point per decision: policy, outcome, source, store, latency and weight", async () => {
    const { points, dataset } = recordingDataset();
    const worker = createWorker(config);
    const workerEnv = { LIMITER: env.LIMITER as unknown as Env["LIMITER"], SPILLWAY_TOKEN: TOKEN, SPILLWAY_ANALYTICS: dataset, SPILLWAY_LOG_DENIALS: "false" } as Env;
    const key = uniqueKey("analytics");
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await check(worker, workerEnv, key)).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect(points).toHaveLength(3);
    expect(points.map((point) => point.blobs)).toEqual([
      ["two-per-hour", "allowed", "api", "durable-object", "two-per-hour"],
      ["two-per-hour", "allowed", "api", "durable-object", "two-per-hour"],
      ["two-per-hour", "denied", "api", "durable-object", "two-per-hour"],
    ]);
    for (const point of points) {
      expect(point.indexes).toEqual(["two-per-hour"]);
      const [latencyMs, weight] = point.doubles!;
      expect(latencyMs).toBeGreaterThanOrEqual(0);
      expect(weight).toBe(1);
    }
  });

  it("samples at SPILLWAY_ANALYTICS_SAMPLE_RATE, each point standing for 1/rate decisions", async () => {
    const { points, dataset } = recordingDataset();
    const worker = createWorker(config);
    const workerEnv = { LIMITER: env.LIMITER as unknown as Env["LIMITER"], SPILLWAY_TOKEN: TOKEN, SPILLWAY_ANALYTICS: dataset, SPILLWAY_ANALYTICS_SAMPLE_RATE: "0.5" } as Env;
    for (let i = 0; i < 40; i++) await check(worker, workerEnv, uniqueKey("sampled"));
    expect(points.length).toBeGreaterThan(5);
    expect(points.length).toBeLessThan(35);
    expect(points.every((point) => point.doubles![1] === 2)).toBe(true);
  });

  it("writes nothing and fails nothing without the binding", async () => {
    const worker = createWorker(config);
    const workerEnv = { LIMITER: env.LIMITER as unknown as Env["LIMITER"], SPILLWAY_TOKEN: TOKEN } as Env;
    const key = uniqueKey("no-analytics");
    expect((await check(worker, workerEnv, key)).status).toBe(200);
    const top = await worker.fetch(new Request("http://spillway.test/v1/top", { headers: { authorization: `Bearer ${TOKEN}` } }), workerEnv, createExecutionContext());
    expect(await top.json()).toEqual({ top: [] });
  });

  it("logs a denial as one JSON line (Workers Logs), unless SPILLWAY_LOG_DENIALS is false", async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    try {
      const key = uniqueKey("logged");
      const worker = createWorker(config);
      for (let i = 0; i < 3; i++) await check(worker, { LIMITER: env.LIMITER as unknown as Env["LIMITER"], SPILLWAY_TOKEN: TOKEN } as Env, key);
      const quiet = createWorker(config);
      const quietKey = uniqueKey("quiet");
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await check(quiet, { LIMITER: env.LIMITER as unknown as Env["LIMITER"], SPILLWAY_TOKEN: TOKEN, SPILLWAY_LOG_DENIALS: "false" } as Env, quietKey)).status);
      expect(statuses).toEqual([200, 200, 429]);
      expect(lines.map((line) => JSON.parse(line))).toEqual([
        { spillway: true, event: "deny", time: expect.any(String), key, source: "api", policies: ["two-per-hour"], store: "durable-object", durationMs: expect.any(Number) },
      ]);
    } finally {
      spy.mockRestore();
    }
  });

  it("the deployed shape (a real analytics_engine_datasets binding in wrangler.test.toml) answers as usual, and /v1/top names the denied key", async () => {
    expect(env.SPILLWAY_ANALYTICS).toBeDefined();
    const key = uniqueKey("top");
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await post("/v1/check", { key, policy: "demo" })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const top = await exports.default.fetch("http://spillway.test/v1/top?limit=100", { headers: { authorization: `Bearer ${TOKEN}` } });
    const { top: rows } = (await top.json()) as { top: { key: string; policy: string; denials: number }[] };
    expect(rows).toContainEqual(expect.objectContaining({ key, policy: "demo", denials: 1 }));
  });
});
