import { describe, expect, it } from "vitest";
import { post, uniqueKey } from "./helpers.js";

describe("POST /v1/check", () => {
  it("goes from 200 to 429 with RateLimit headers", async () => {
    const key = uniqueKey();
    const policy = { name: "three", algorithm: "fixed-window", limit: 3, period: "1h" };
    for (let i = 0; i < 3; i++) {
      const response = await post("/v1/check", { key, policy });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ allowed: true, remaining: 2 - i });
    }
    const denied = await post("/v1/check", { key, policy });
    expect(denied.status).toBe(429);
    expect(denied.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(denied.headers.get("ratelimit-policy")).toBe('"three";q=3;w=3600');
    expect(await denied.json()).toMatchObject({ allowed: false, remaining: 0, policy: "three" });
  });
});
