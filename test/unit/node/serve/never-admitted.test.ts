import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { parsePolicyList } from "../../../../src/core/policy.js";
import { rateLimitHeaders } from "../../../../src/core/headers.js";
import { quotaExceededResponse } from "../../../../src/http/limit.js";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

// A cost above a policy's capacity can never pass: its 429 must not say "retry in 1 s".
const three = { name: "three", algorithm: "fixed-window", limit: 3, period: "1h" };
const roomy = { name: "roomy", algorithm: "gcra", limit: 100, period: "1m" };

describe("a request that can never be admitted on /v1/check (spillway serve)", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ config: parseConfig({ policies: [three, roomy] }), limiter: new MemoryStore(), port: 0, token: "secret" });
  });
  afterAll(() => server.close());

  const check = (body: unknown) =>
    fetch(`${server.url}/v1/check`, { method: "POST", headers: { authorization: "Bearer secret", "content-type": "application/json" }, body: JSON.stringify(body) });

  it("answers 429 without Retry-After, retryAfterMs null and a detail naming the cost, policy and capacity", async () => {
    const response = await check({ key: "k-never", policy: ["three", "roomy"], cost: 5 });
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBeNull();
    expect(response.headers.get("ratelimit-policy")).toContain('"three"');
    const body = (await response.json()) as { retryAfterMs: number | null; detail: string };
    expect(body.retryAfterMs).toBeNull();
    expect(body.detail).toBe('the cost 5 exceeds the capacity of policy "three" (3): this request can never be admitted; retrying it will not help');
  });

  it("still sends Retry-After (and no detail) when a later retry would pass", async () => {
    await check({ key: "k-later", policy: "three", cost: 3 });
    const response = await check({ key: "k-later", policy: "three", cost: 1 });
    expect(response.status).toBe(429);
    expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await response.json()).not.toHaveProperty("detail");
  });
});

describe("the gateway's and rateLimit()'s 429 for a request that can never pass", () => {
  // Both send cost 1, which every capacity (≥ 1) holds; the shared 429 builder is still right for any cost.
  it("has no Retry-After and a problem detail that says the cost exceeds the capacity", async () => {
    const policies = parsePolicyList([three], "policies");
    const decision = await new MemoryStore().check("k", policies, { cost: 4, mode: "reject", maxWaitMs: 0 });
    const response = quotaExceededResponse(decision, rateLimitHeaders(decision, policies), 4);
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBeNull();
    const problem = (await response.json()) as { detail: string; "violated-policies": string[] };
    expect(problem.detail).toBe('the cost 4 exceeds the capacity of policy "three" (3): this request can never be admitted; retrying it will not help');
    expect(problem["violated-policies"]).toEqual(["three"]);
  });
});
