import { describe, expect, it } from "vitest";
import { post, uniqueKey } from "./helpers.js";

// A cost above a policy's capacity can never pass: its 429 must not say "retry in 1 s".
const three = { name: "three", algorithm: "gcra", limit: 3, period: "1h" };

describe("a request that can never be admitted on the Worker's /v1/check", () => {
  it("answers 429 without Retry-After, retryAfterMs null and a detail naming the cost, policy and capacity", async () => {
    const response = await post("/v1/check", { key: uniqueKey(), policy: three, cost: 4 });
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBeNull();
    const body = (await response.json()) as { retryAfterMs: number | null; detail: string };
    expect(body.retryAfterMs).toBeNull();
    expect(body.detail).toBe('the cost 4 exceeds the capacity of policy "three" (3): this request can never be admitted; retrying it will not help');
  });

  it("still sends Retry-After when a later retry would pass", async () => {
    const key = uniqueKey();
    await post("/v1/check", { key, policy: three, cost: 3 });
    const response = await post("/v1/check", { key, policy: three });
    expect(response.status).toBe(429);
    expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });
});
