import { env } from "cloudflare:workers";
import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { uniqueKey } from "./helpers.js";

const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

describe("LimiterObject eviction", () => {
  it("remembers what it admitted after the object is evicted (no burst re-opens)", async () => {
    const policy = parsePolicy({ name: "hourly", algorithm: "gcra", limit: 5, period: "1h" }, "policy");
    const stub = env.LIMITER.getByName(uniqueKey("evict"));
    for (let i = 0; i < 3; i++) expect((await stub.check([policy], reject)).allowed).toBe(true);

    await evictDurableObject(stub);

    const after = await stub.check([policy], reject);
    expect(after).toMatchObject({ allowed: true, remaining: 1 });
    expect((await stub.check([policy], reject)).remaining).toBe(0);
    expect((await stub.check([policy], reject)).allowed).toBe(false);
  });

  it("keeps every algorithm's state across eviction", async () => {
    const policies = [
      parsePolicy({ name: "tb", algorithm: "token-bucket", limit: 2, period: "1h" }, "p"),
      parsePolicy({ name: "fw", algorithm: "fixed-window", limit: 2, period: "1d" }, "p"),
      parsePolicy({ name: "sw", algorithm: "sliding-window", limit: 2, period: "1d" }, "p"),
      parsePolicy({ name: "sl", algorithm: "sliding-log", limit: 2, period: "1h" }, "p"),
    ];
    for (const policy of policies) {
      const stub = env.LIMITER.getByName(uniqueKey(policy.name));
      await stub.check([policy], { ...reject, cost: 2 });
      await evictDurableObject(stub);
      expect((await stub.check([policy], reject)).allowed, policy.algorithm).toBe(false);
    }
  });
});
