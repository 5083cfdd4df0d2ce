import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { post, uniqueKey } from "./helpers.js";

const rpc = exports.SpillwayRpc;
const perHour = { name: "debit-per-hour", algorithm: "fixed-window", limit: 5, period: "1h" };
const slots = { name: "slots", algorithm: "concurrency", limit: 2 };

describe("/v1/check mode debit (Durable Object store)", () => {
  it("answers 200 with the state after the debit, past the limit, and later checks wait it out", async () => {
    const key = uniqueKey("debit");
    const first = await post("/v1/check", { key, policy: perHour, cost: 3, mode: "debit" });
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ allowed: true, remaining: 2, retryAfterMs: 0 });
    expect(first.headers.get("ratelimit")).toMatch(/^"debit-per-hour";r=2;t=\d+$/);

    // Past the limit: still 200 (the work happened), the decision says a request would be refused.
    const over = await post("/v1/check", { key, policy: perHour, cost: 4, mode: "debit" });
    expect(over.status).toBe(200);
    const decision = (await over.json()) as { allowed: boolean; remaining: number; retryAfterMs: number };
    expect(decision).toMatchObject({ allowed: false, remaining: 0 });
    expect(decision.retryAfterMs).toBeGreaterThan(0);
    expect(over.headers.get("retry-after")).not.toBeNull();

    expect((await post("/v1/check", { key, policy: perHour })).status).toBe(429);
    await post("/v1/reset", { key, policy: perHour });
    expect((await post("/v1/check", { key, policy: perHour })).status).toBe(200);
  });

  it("refuses a concurrency policy with a 400 that names mode, and debits nothing", async () => {
    const key = uniqueKey("debit-slots");
    const response = await post("/v1/check", { key, policy: [perHour, slots], mode: "debit" });
    expect(response.status).toBe(400);
    const problem = (await response.json()) as { field: string; detail: string };
    expect(problem.field).toBe("mode");
    expect(problem.detail).toMatch(/^mode: "debit" is not for concurrency policies \("slots"/);
    expect(await (await post("/v1/peek", { key, policy: perHour })).json()).toMatchObject({ remaining: 5 });
  });
});

describe("RPC check mode debit", () => {
  it("debits through the binding with the HTTP API's shapes", async () => {
    const key = uniqueKey("rpc-debit");
    expect(await rpc.check({ key, policy: perHour, cost: 6, mode: "debit" })).toMatchObject({ allowed: false, remaining: 0, policy: "debit-per-hour" });
    expect(await rpc.check({ key, policy: perHour })).toMatchObject({ allowed: false });
    expect(await rpc.check({ key, policy: "per-minute", cost: 0, mode: "debit" })).toMatchObject({ allowed: true, limit: 600 });
  });

  it("a concurrency stack is refused with a message that names mode", async () => {
    const messageOf = (call: Promise<unknown>) => call.then(() => "resolved", (error: Error) => error.message);
    expect(await messageOf(rpc.check({ key: uniqueKey("rpc-debit"), policy: slots, mode: "debit" }))).toMatch(/^mode: "debit" is not for concurrency/);
    expect(await messageOf(rpc.check({ key: "k", policy: perHour, mode: "debits" }))).toMatch(/^mode: must be "reject", "reserve" or "debit"/);
  });
});

describe("/v1/check refunds: mode debit with a negative cost (Durable Object store)", () => {
  it("gives units back, never above the limit, and a check admits again", async () => {
    const key = uniqueKey("refund");
    await post("/v1/check", { key, policy: perHour, cost: 5, mode: "debit" });
    expect((await post("/v1/check", { key, policy: perHour })).status).toBe(429);
    const refund = await post("/v1/check", { key, policy: perHour, cost: -2, mode: "debit" });
    expect(refund.status).toBe(200);
    expect(await refund.json()).toMatchObject({ allowed: true, remaining: 2 });
    expect((await post("/v1/check", { key, policy: perHour })).status).toBe(200);
    // A refund past what was spent stops at the limit.
    expect(await (await post("/v1/check", { key, policy: perHour, cost: -1000, mode: "debit" })).json()).toMatchObject({ remaining: 5 });
  });

  it("a negative cost without mode debit is a 400 naming cost, and a concurrency stack names mode", async () => {
    const key = uniqueKey("refund-bad");
    for (const mode of [undefined, "reject", "reserve"]) {
      const response = await post("/v1/check", { key, policy: perHour, cost: -1, ...(mode ? { mode } : {}) });
      expect(response.status).toBe(400);
      const problem = (await response.json()) as { field: string; detail: string };
      expect(problem.field).toBe("cost");
      expect(problem.detail).toMatch(/^cost: must be an integer from 0 to 1000000000 with mode "re(ject|serve)" \(a negative cost is a refund: mode "debit"\), got -1$/);
    }
    const under = await post("/v1/check", { key, policy: perHour, cost: -1e9 - 1, mode: "debit" });
    expect(((await under.json()) as { field: string }).field).toBe("cost");
    const slotsRefund = await post("/v1/check", { key, policy: [perHour, slots], cost: -1, mode: "debit" });
    expect(((await slotsRefund.json()) as { field: string }).field).toBe("mode");
  });

  it("RPC check refunds the same way, and refuses the same way", async () => {
    const key = uniqueKey("rpc-refund");
    await rpc.check({ key, policy: perHour, cost: 5, mode: "debit" });
    expect(await rpc.check({ key, policy: perHour, cost: -3, mode: "debit" })).toMatchObject({ allowed: true, remaining: 3 });
    const messageOf = (call: Promise<unknown>) => call.then(() => "resolved", (error: Error) => error.message);
    expect(await messageOf(rpc.check({ key, policy: perHour, cost: -1 }))).toMatch(/^cost: must be an integer from 0 to 1000000000 with mode "reject"/);
  });
});
