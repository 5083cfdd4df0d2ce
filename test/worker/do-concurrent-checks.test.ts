import { describe, expect, it } from "vitest";
import { post, uniqueKey } from "./helpers.js";

describe("200 concurrent checks on one key", () => {
  it.each([
    { algorithm: "gcra", limit: 10, period: "1h", burst: 25 },
    { algorithm: "token-bucket", limit: 10, period: "1h", burst: 25 },
    { algorithm: "fixed-window", limit: 25, period: "1d" },
    { algorithm: "sliding-window", limit: 25, period: "1d" },
    { algorithm: "sliding-log", limit: 25, period: "1h" },
  ])("admit exactly the bound ($algorithm)", async (shape) => {
    const key = uniqueKey(shape.algorithm);
    const policy = { name: "hot", ...shape };
    const responses = await Promise.all(Array.from({ length: 200 }, () => post("/v1/check", { key, policy })));
    const statuses = responses.map((response) => response.status);
    await Promise.all(responses.map((response) => response.body?.cancel()));
    expect(statuses.filter((status) => status === 200)).toHaveLength(25);
    expect(statuses.filter((status) => status === 429)).toHaveLength(175);
  });
});
