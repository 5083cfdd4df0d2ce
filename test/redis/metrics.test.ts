import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import { type MetricsServer, type NodeObservability, createNodeObservability, startMetricsServer } from "../../src/node/metrics/observability.js";
import { type RunningServer, startServer } from "../../src/node/serve/server.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

const TOKEN = "metrics-token";
const config = parseConfig({ policies: [{ name: "per-user", algorithm: "fixed-window", limit: 2, period: "1h", failMode: "open" }] });

let redis: RedisServer;
let store: RedisStore;
let observing: NodeObservability;
let server: RunningServer;
let metricsServer: MetricsServer;

beforeAll(async () => {
  redis = await startRedis();
  store = new RedisStore({ url: redis.url, timeoutMs: 200, log: () => {} });
  // The log lines go to a list: the failed-open line is checked, and the test stays quiet.
  observing = createNodeObservability({ config, limiter: store, log: (line) => logged.push(line) });
  server = await startServer({ config, limiter: observing.apiLimiter, port: 0, token: TOKEN, observability: observing.routes });
  metricsServer = await startMetricsServer(observing.prometheus, 0, "127.0.0.1");
});
afterAll(async () => {
  await Promise.all([server?.close(), metricsServer?.close()]);
  await redis?.stop();
});
const logged: Record<string, unknown>[] = [];

const check = (key: string) =>
  fetch(`${server.url}/v1/check`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ key, policy: "per-user" }) });

function valueOf(text: string, name: string, labels: Record<string, string>): number | undefined {
  const family = parsePrometheusTextFormat(text).find((metric) => metric.name === name);
  const sample = family?.metrics.find((metric) => Object.entries(labels).every(([label, value]) => metric.labels?.[label] === value));
  return sample === undefined ? undefined : Number(sample.value);
}

describe("spillway serve /metrics", () => {
  it("counts 2 allowed, 1 denied and 1 failed open (Redis stopped) exactly, as an independent parser reads them", async () => {
    expect((await Promise.all([check("alice"), check("alice")])).map((r) => r.status)).toEqual([200, 200]);
    expect((await check("alice")).status).toBe(429);
    const up = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(valueOf(up, "spillway_store_up", { store: "redis" })).toBe(1);

    await redis.stop();
    const failedOpen = await check("alice");
    expect(failedOpen.status).toBe(200);
    expect(failedOpen.headers.get("spillway-failed-open")).toBe("true");

    const response = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain");
    const text = await response.text();
    const decisions = (outcome: string) => valueOf(text, "spillway_decisions_total", { policy: "per-user", outcome });
    expect({ allowed: decisions("allowed"), denied: decisions("denied"), failed_open: decisions("failed_open"), error: decisions("error") }).toEqual({ allowed: 2, denied: 1, failed_open: 1, error: 0 });
    expect(valueOf(text, "spillway_store_errors_total", { store: "redis", kind: "unavailable" })).toBe(1);
    expect(valueOf(text, "spillway_store_up", { store: "redis" })).toBe(0);
    const duration = parsePrometheusTextFormat(text).find((metric) => metric.name === "spillway_decision_duration_seconds");
    expect(duration?.type).toBe("HISTOGRAM");
    expect(text).toContain('spillway_decision_duration_seconds_count{store="redis"} 4');
    for (const family of ["process_cpu_seconds_total", "nodejs_eventloop_lag_seconds"]) expect(text).toContain(family);
    expect(logged.filter((line) => line.event === "fail-open")).toEqual([expect.objectContaining({ key: "alice", source: "api", policies: ["per-user"], store: "redis" })]);
    expect(logged.filter((line) => line.event === "deny")).toHaveLength(1);

    // The same numbers on --metrics-port, without the token.
    const open = await fetch(`${metricsServer.url}/metrics`);
    expect(open.status).toBe(200);
    expect(valueOf(await open.text(), "spillway_decisions_total", { policy: "per-user", outcome: "failed_open" })).toBe(1);
  });

  it("answers 401 without the token", async () => {
    const response = await fetch(`${server.url}/metrics`);
    expect(response.status).toBe(401);
    expect(await response.text()).not.toContain("spillway_decisions_total");
  });
});
