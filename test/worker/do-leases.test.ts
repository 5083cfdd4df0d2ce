import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import type { AcquireResult } from "../../src/core/types.js";
import { uniqueKey } from "./helpers.js";

const oneSlot = (lease: string) => parsePolicy({ name: "one", algorithm: "concurrency", limit: 1, lease }, "policy");
const leaseIdOf = (result: AcquireResult) => {
  if (!result.acquired) throw new Error(`expected a lease, got ${JSON.stringify(result)}`);
  return result.leaseId;
};

describe("LimiterObject leases", () => {
  it("an expired lease wakes the next FIFO waiter", async () => {
    const policy = oneSlot("200ms");
    const stub = env.LIMITER.getByName(uniqueKey("lease-expiry"));
    // From before the first lease is taken: the lease runs 200 ms from the object's moment of
    // acquiring it, which a loaded machine can answer well after (the wait is then shorter).
    const startedMs = Date.now();
    leaseIdOf(await stub.acquire([policy], { maxWaitMs: 0 }));
    const waiter = await stub.acquire([policy], { maxWaitMs: 5000 });
    expect(waiter.acquired).toBe(true);
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(150);
  });

  it("serves waiters in arrival order as leases are released", async () => {
    const policy = oneSlot("30s");
    const stub = env.LIMITER.getByName(uniqueKey("lease-fifo"));
    let held = leaseIdOf(await stub.acquire([policy], { maxWaitMs: 0 }));
    const order: number[] = [];
    const waiters = [0, 1, 2, 3].map(async (index) => {
      // Stagger arrival so the queue order is known.
      await new Promise((resolve) => setTimeout(resolve, index * 20));
      const result = await stub.acquire([policy], { maxWaitMs: 10_000 });
      order.push(index);
      return result;
    });
    await new Promise((resolve) => setTimeout(resolve, 120));
    for (let i = 0; i < 4; i++) {
      expect(await stub.release([policy], held)).toEqual({ released: true });
      await new Promise((resolve) => setTimeout(resolve, 20));
      held = leaseIdOf(await waiters[order[i]!]!);
    }
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it("a waiter that times out leaves the queue and is told when to retry", async () => {
    const policy = oneSlot("1s");
    const stub = env.LIMITER.getByName(uniqueKey("lease-timeout"));
    const held = leaseIdOf(await stub.acquire([policy], { maxWaitMs: 0 }));
    const gaveUp = await stub.acquire([policy], { maxWaitMs: 50 });
    expect(gaveUp.acquired).toBe(false);
    if (!gaveUp.acquired) expect(gaveUp.retryAfterMs).toBeGreaterThan(0);
    // The queue is empty again: after a release the next caller gets the slot at once.
    await stub.release([policy], held);
    expect((await stub.acquire([policy], { maxWaitMs: 0 })).acquired).toBe(true);
  });

  it("a newcomer does not pass a queued waiter, and checks respect the queue", async () => {
    const policy = oneSlot("30s");
    const stub = env.LIMITER.getByName(uniqueKey("lease-no-pass"));
    const held = leaseIdOf(await stub.acquire([policy], { maxWaitMs: 0 }));
    const queued = stub.acquire([policy], { maxWaitMs: 5000 });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect((await stub.acquire([policy], { maxWaitMs: 0 })).acquired).toBe(false);
    expect((await stub.check([policy], { cost: 1, mode: "reject", maxWaitMs: 0 })).allowed).toBe(false);
    await stub.release([policy], held);
    expect((await queued).acquired).toBe(true);
  });

  it("release is by lease id, and extend keeps a lease alive", async () => {
    // The test clock: the lease's 150 ms must not depend on how busy the machine is.
    const policy = oneSlot("150ms");
    const stub = env.CLOCKED_LIMITER.getByName(uniqueKey("lease-extend"));
    const at = async (ms: number) => stub.setClockMs(1_000_000 + ms);
    await at(0);
    const held = leaseIdOf(await stub.acquire([policy], { maxWaitMs: 0 }));
    await at(10);
    expect(await stub.release([policy], "not-my-lease")).toEqual({ released: false });
    await at(100);
    expect(await stub.extend([policy], held, 1000)).toEqual({ extended: true, leaseMs: 1000 });
    // Past the original 150 ms, the extended lease still holds the only slot.
    await at(200);
    expect((await stub.acquire([policy], { maxWaitMs: 0 })).acquired).toBe(false);
    await at(300);
    expect(await stub.release([policy], held)).toEqual({ released: true });
    await at(310);
    expect((await stub.acquire([policy], { maxWaitMs: 0 })).acquired).toBe(true);
  });

  it("an expired lease cannot be extended", async () => {
    const policy = oneSlot("150ms");
    const stub = env.CLOCKED_LIMITER.getByName(uniqueKey("lease-expired"));
    await stub.setClockMs(1_000_000);
    const held = leaseIdOf(await stub.acquire([policy], { maxWaitMs: 0 }));
    await stub.setClockMs(1_000_150);
    expect(await stub.extend([policy], held, 1000)).toEqual({ extended: false, leaseMs: 1000 });
    await stub.setClockMs(1_000_151);
    expect((await stub.acquire([policy], { maxWaitMs: 0 })).acquired).toBe(true);
  });
});
