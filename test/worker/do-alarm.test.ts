import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { storedStates, uniqueKey } from "./helpers.js";

const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("LimiterObject alarm", () => {
  it("deletes state once it is equivalent to a fresh key", async () => {
    const policy = parsePolicy({ name: "short", algorithm: "gcra", limit: 2, period: "100ms" }, "policy");
    const stub = env.LIMITER.getByName(uniqueKey("alarm"));
    await stub.check([policy], reject);
    expect(await storedStates(stub)).toBe(1);

    await sleep(150);
    // The alarm (due at 50 ms) has usually run by itself by now; run it if it has not.
    await runDurableObjectAlarm(stub);
    expect(await storedStates(stub)).toBe(0);
    // A fresh key again: the full burst is available.
    expect(await stub.peek([policy])).toMatchObject({ allowed: true, remaining: 2 });
  });

  it("reschedules itself while state is still live, and keeps that state", async () => {
    const short = parsePolicy({ name: "short", algorithm: "fixed-window", limit: 5, period: "100ms" }, "policy");
    const long = parsePolicy({ name: "long", algorithm: "sliding-log", limit: 5, period: "1h" }, "policy");
    const stub = env.LIMITER.getByName(uniqueKey("alarm-live"));
    await stub.check([short, long], reject);
    await sleep(250);
    await runDurableObjectAlarm(stub);
    expect(await storedStates(stub)).toBe(1);
    expect(await stub.peek([long])).toMatchObject({ remaining: 4 });
    // The alarm is set again for the live state.
    const { runInDurableObject } = await import("cloudflare:test");
    const alarmAtMs = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(alarmAtMs).toBeGreaterThan(Date.now() + 3_500_000);
  });
});
