import { expect } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";

// /v1/check refunds (mode "debit", a negative cost) on `spillway serve`, the same cases on every
// store: test/unit/node/serve/refund-http.test.ts (memory), test/redis/refund-http.test.ts (Redis).
export const refundConfig = parseConfig({
  policies: [
    { name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" },
    { name: "hourly", algorithm: "fixed-window", limit: 5, period: "1h" },
    { name: "slots", algorithm: "concurrency", limit: 2 },
  ],
});

export type Send = (route: string, body: unknown) => Promise<{ status: number; body: Record<string, unknown> }>;

export async function refundCases(send: Send, prefix: string): Promise<void> {
  // A reservation of 2,000 tokens, 1,500 used: 500 come back, and never past the burst.
  const key = `${prefix}-bucket`;
  expect(await send("check", { key, policy: "tokens", cost: 2000 })).toMatchObject({ status: 200, body: { remaining: 8000 } });
  expect(await send("check", { key, policy: "tokens", cost: -500, mode: "debit" })).toMatchObject({ status: 200, body: { allowed: true } });
  expect((await send("peek", { key, policy: "tokens" })).body.remaining).toBeGreaterThanOrEqual(8500);
  expect(await send("check", { key, policy: "tokens", cost: -1e9, mode: "debit" })).toMatchObject({ status: 200, body: { remaining: 10_000 } });

  // A window spent full admits again after a refund; a refund past what was spent floors at empty.
  const window = `${prefix}-window`;
  expect(await send("check", { key: window, policy: "hourly", cost: 5 })).toMatchObject({ status: 200 });
  expect((await send("check", { key: window, policy: "hourly" })).status).toBe(429);
  expect(await send("check", { key: window, policy: "hourly", cost: -2, mode: "debit" })).toMatchObject({ status: 200, body: { allowed: true, remaining: 2 } });
  expect(await send("check", { key: window, policy: "hourly", cost: 2 })).toMatchObject({ status: 200, body: { remaining: 0 } });
  expect(await send("check", { key: window, policy: "hourly", cost: -99, mode: "debit" })).toMatchObject({ body: { remaining: 5 } });

  // spentAtMs: a refund goes back to the window its units were spent in (the server's own
  // clock may be another host's: Redis's TIME), and a window that has turned gets nothing.
  const spent = `${prefix}-spent`;
  const reservedAtMs = Date.now();
  expect(await send("check", { key: spent, policy: "hourly", cost: 5 })).toMatchObject({ status: 200, body: { remaining: 0 } });
  expect(await send("check", { key: spent, policy: "hourly", cost: -3, mode: "debit", spentAtMs: reservedAtMs - 3_600_000 })).toMatchObject({ status: 200, body: { allowed: false, remaining: 0 } });
  expect(await send("check", { key: spent, policy: "hourly", cost: -3, mode: "debit", spentAtMs: reservedAtMs })).toMatchObject({ status: 200, body: { allowed: true, remaining: 3 } });
  // A positive debit ignores it.
  expect(await send("check", { key: spent, policy: "hourly", cost: 1, mode: "debit", spentAtMs: reservedAtMs - 3_600_000 })).toMatchObject({ status: 200, body: { remaining: 2 } });
}

export async function refundRefusals(send: Send, prefix: string): Promise<void> {
  const key = `${prefix}-refused`;
  for (const mode of [undefined, "reject", "reserve"]) {
    const refused = await send("check", { key, policy: "hourly", cost: -1, ...(mode ? { mode } : {}) });
    expect(refused.status).toBe(400);
    expect(refused.body.field).toBe("cost");
    expect(refused.body.detail).toMatch(/^cost: must be an integer from 0 to 1000000000 with mode "re(ject|serve)" \(a negative cost is a refund: mode "debit"\), got -1$/);
  }
  expect((await send("check", { key, policy: "hourly", cost: -1e9 - 1, mode: "debit" })).body).toMatchObject({ field: "cost" });
  expect((await send("check", { key, policy: "hourly", cost: -1.5, mode: "debit" })).body).toMatchObject({ field: "cost" });
  expect((await send("check", { key, policy: ["hourly", "slots"], cost: -1, mode: "debit" })).body).toMatchObject({ field: "mode" });
  const misplaced = await send("check", { key, policy: "hourly", cost: 1, spentAtMs: Date.now() });
  expect([misplaced.status, misplaced.body.detail]).toEqual([400, 'spentAtMs: is a refund\'s spend time, for mode "debit" only (mode is "reject")']);
  for (const spentAtMs of [-1, 1.5, "now", 9e15]) expect((await send("check", { key, policy: "hourly", cost: -1, mode: "debit", spentAtMs })).body).toMatchObject({ field: "spentAtMs" });
  // Nothing was spent or given by any of them.
  expect((await send("peek", { key, policy: "hourly" })).body.remaining).toBe(5);
}
