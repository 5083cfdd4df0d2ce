import { env } from "cloudflare:workers";
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { storedStates, uniqueKey } from "./helpers.js";

const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const prepaid = parsePolicy({ name: "prepaid", algorithm: "credits", limit: 10 }, "policy");
const shortLived = parsePolicy({ name: "short", algorithm: "gcra", limit: 2, period: "100ms" }, "policy");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("LimiterObject: a credits balance", () => {
  it("a spent balance is kept (no alarm drops it, an evicted object reloads it); one back at its limit is deleted", async () => {
    const stub = env.LIMITER.getByName(uniqueKey("do-credits"));
    await stub.check([prepaid], { ...reject, cost: 4 });
    expect(await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm())).toBeNull();
    await stub.check([shortLived], reject);
    await sleep(150);
    await runDurableObjectAlarm(stub);
    expect(await stub.peek([prepaid])).toMatchObject({ remaining: 6 });
    // Evicted: the balance comes back from SQLite.
    await evictDurableObject(stub);
    expect(await stub.peek([prepaid])).toMatchObject({ remaining: 6 });
    expect(await stub.credits(prepaid, { add: 4 })).toEqual({ remaining: 10 });
    await sleep(150);
    await runDurableObjectAlarm(stub);
    expect(await storedStates(stub)).toBe(0);
  });
});
