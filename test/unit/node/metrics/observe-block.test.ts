import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { createNodeObservability } from "../../../../src/node/metrics/observability.js";
import type { LogLine } from "../../../../src/observe/log-lines.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

const config = parseConfig({
  policies: [
    { name: "logins", algorithm: "fixed-window", limit: 1, period: "1m", block: "10m" },
    { name: "tokens", algorithm: "token-bucket", limit: 100, period: "1m", block: "1h" },
  ],
});
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

/** spillway_decisions_total by outcome for one policy. */
async function outcomes(scrape: () => Promise<{ body: string }>, policy: string): Promise<Record<string, number>> {
  const family = parsePrometheusTextFormat((await scrape()).body).find((one) => one.name === "spillway_decisions_total");
  const counts: Record<string, number> = {};
  for (const metric of (family?.metrics ?? []) as { labels: Record<string, string>; value: string }[]) {
    if (metric.labels.policy === policy) counts[metric.labels.outcome!] = Number(metric.value);
  }
  return counts;
}

describe("observing blocks", () => {
  it("counts a denial under a block as outcome blocked, and logs one block event when it starts", async () => {
    const lines: LogLine[] = [];
    const observing = createNodeObservability({ config, limiter: new MemoryStore(), log: (line) => lines.push(line) });
    const logins = [config.catalog.get("logins")!];
    await observing.apiLimiter.check("mallory", logins, reject); // allowed
    await observing.apiLimiter.check("mallory", logins, reject); // denied: the block starts
    await observing.apiLimiter.check("mallory", logins, reject); // blocked
    expect(await outcomes(observing.routes.metrics!, "logins")).toMatchObject({ allowed: 1, denied: 0, blocked: 2, failed_open: 0, error: 0 });
    const blocks = lines.filter((line) => line.event === "block");
    expect(blocks).toEqual([expect.objectContaining({ spillway: true, event: "block", key: "mallory", policy: "logins", source: "api", store: "memory", blockedMs: 600_000 })]);
    expect(lines.filter((line) => line.event === "deny")).toHaveLength(2);
  });

  it("a burst of denials in the block's first millisecond logs it once; a block started again after it ended logs again", async () => {
    const lines: LogLine[] = [];
    const shortBlock = parseConfig({ policies: [{ name: "pins", algorithm: "fixed-window", limit: 1, period: "1s", block: "1s" }] });
    const observing = createNodeObservability({ config: shortBlock, limiter: new MemoryStore(), log: (line) => lines.push(line) });
    const pins = [shortBlock.catalog.get("pins")!];
    const burst = () => Promise.all(Array.from({ length: 50 }, () => observing.apiLimiter.check("card", pins, reject)));
    expect((await burst()).filter((decision) => decision.allowed)).toHaveLength(1);
    expect(lines.filter((line) => line.event === "block")).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // the block and its window are over
    expect((await burst()).filter((decision) => decision.allowed)).toHaveLength(1);
    expect(lines.filter((line) => line.event === "block")).toHaveLength(2);
  });

  it("logs the block a debit's overdraft starts", async () => {
    const lines: LogLine[] = [];
    const observing = createNodeObservability({ config, limiter: new MemoryStore(), log: (line) => lines.push(line) });
    const tokens = [config.catalog.get("tokens")!];
    await observing.apiLimiter.debit("tenant", tokens, 60);
    expect(lines.filter((line) => line.event === "block")).toEqual([]);
    await observing.apiLimiter.debit("tenant", tokens, 60);
    expect(lines.filter((line) => line.event === "block")).toEqual([expect.objectContaining({ key: "tenant", policy: "tokens", blockedMs: 3_600_000 })]);
  });
});
