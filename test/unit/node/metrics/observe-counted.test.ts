import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { createNodeGateway } from "../../../../src/node/http/gateway.js";
import { createNodeObservability } from "../../../../src/node/metrics/observability.js";
import { startServer } from "../../../../src/node/serve/server.js";
import type { LogLine } from "../../../../src/observe/log-lines.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { type Running, request, startOrigin } from "../http/gateway-helpers.js";

// A counted route (docs/counting.md) decides on a peek, not a check: its admissions and its
// 429s are decisions all the same, and the metrics, live stats and log lines count them so.

interface Served {
  url: string;
  scrape: () => Promise<{ body: string }>;
  lines: LogLine[];
  close: () => Promise<void>;
}

const running: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const one of running.splice(0)) await one.close();
});

/** `spillway serve` in-process with its observability, in front of an origin that answers `status`. */
async function serveCounted(route: Record<string, unknown>, policy: Record<string, unknown>, status: number): Promise<Served> {
  const origin: Running = await startOrigin((_req, res) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ usage: { total_tokens: 1 } })));
  running.push(origin);
  const config = parseConfig({ policies: [policy], origin: origin.url, routes: [{ match: { path: "/*" }, key: "header:x-user", policies: [policy.name], ...route }] });
  const limiter = new MemoryStore();
  const lines: LogLine[] = [];
  const observing = createNodeObservability({ config, limiter, log: (line) => lines.push(line) });
  const fallback = createNodeGateway({ config, limiter, log: () => {}, observer: observing.observer });
  const server = await startServer({ config, limiter: observing.apiLimiter, port: 0, fallback, token: "test-token", drainTimeoutMs: 100, observability: observing.routes });
  running.push(server);
  return { url: server.url, scrape: observing.routes.metrics!, lines, close: () => server.close() };
}

/** spillway_decisions_total by outcome for one policy. */
async function outcomes(served: Served, policy: string): Promise<Record<string, number>> {
  const family = parsePrometheusTextFormat((await served.scrape()).body).find((one) => one.name === "spillway_decisions_total");
  const counts: Record<string, number> = {};
  for (const metric of (family?.metrics ?? []) as { labels: Record<string, string>; value: string }[]) {
    if (metric.labels.policy === policy) counts[metric.labels.outcome!] = Number(metric.value);
  }
  return counts;
}

async function send(served: Served, user: string, times: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < times; i++) statuses.push((await request(`${served.url}/login`, { method: "POST", headers: { "x-user": user } })).status);
  return statuses;
}

describe("a counted route's decisions in the metrics", () => {
  it("counts every admission and every 429 of a route that counts failed logins (count 401)", async () => {
    const served = await serveCounted({ count: { status: [401] } }, { name: "logins", algorithm: "fixed-window", limit: 3, period: "1h" }, 401);
    expect(await send(served, "mallory", 5)).toEqual([401, 401, 401, 429, 429]);
    expect(await outcomes(served, "logins")).toMatchObject({ allowed: 3, denied: 2 });
    expect(served.lines.filter((line) => line.event === "deny")).toHaveLength(2);
  });

  it("counts a cost route's admissions and refusals (cost from the answer's body)", async () => {
    const served = await serveCounted({ cost: { responseJson: "usage.total_tokens", max: 10 } }, { name: "tokens", algorithm: "fixed-window", limit: 2, period: "1h" }, 200);
    expect(await send(served, "tenant", 3)).toEqual([200, 200, 429]);
    expect(await outcomes(served, "tokens")).toMatchObject({ allowed: 2, denied: 1 });
  });

  it("a refusal that starts a block is counted once, by the check that starts it", async () => {
    const served = await serveCounted({ count: { status: [401] } }, { name: "pins", algorithm: "fixed-window", limit: 1, period: "1h", block: "10m" }, 401);
    expect(await send(served, "card", 3)).toEqual([401, 429, 429]);
    const counts = await outcomes(served, "pins");
    expect(counts.allowed).toBe(1);
    expect((counts.denied ?? 0) + (counts.blocked ?? 0)).toBe(2);
    expect(served.lines.filter((line) => line.event === "block")).toHaveLength(1);
  });
});
