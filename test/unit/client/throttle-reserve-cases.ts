import { expect } from "vitest";
import type { Limiter } from "../../../src/core/limiter.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { MaxWaitExceededError, createThrottle } from "../../../src/client/index.js";

// Throttle.reserve (docs/library.md, "Reserve, then settle"), the same cases on every limiter:
// test/unit/client/throttle-reserve.test.ts (memory, the HTTP API), test/redis (Redis).
export const TOKENS = { name: "reserve-tokens", algorithm: "fixed-window" as const, limit: 10_000, period: "1h" };

export async function throttleReserveCases(limiter: Limiter, prefix: string): Promise<void> {
  const key = `${prefix}:${crypto.randomUUID()}`;
  const throttle = createThrottle({ limiter, key, policy: TOKENS, maxWaitMs: 0 });
  const left = async () => (await createThrottle({ limiter, key, policy: TOKENS }).reserve(1)).decision.remaining + 1;

  // 10 callers at once reserving 2,000 each from 10,000: 5 get a slot, 5 are refused, nothing spent for them.
  const tries = await Promise.allSettled(Array.from({ length: 10 }, () => throttle.reserve(2000)));
  const reservations = tries.flatMap((tried) => (tried.status === "fulfilled" ? [tried.value] : []));
  expect(reservations).toHaveLength(5);
  expect(tries.filter((tried) => tried.status === "rejected" && tried.reason instanceof MaxWaitExceededError)).toHaveLength(5);

  // Each used 1,200: 800 back apiece; one did not know (undefined): its reservation stands.
  const settled = await Promise.all(reservations.slice(0, 4).map((reservation) => reservation.settle(1200)));
  expect(settled.at(-1)?.remaining).toBe(3200);
  expect(await reservations[4]!.settle(undefined)).toBeUndefined();
  expect(reservations[4]!.settled).toBe(true);
  expect(() => reservations[4]!.settle(10)).toThrow("settle: this reservation was settled already (with 2000): a reservation settles once");
  // left() reserved 1 to read the state: 3,200 before it.
  expect(await left()).toBe(3200);

  // An excess is charged past the limit: the key is in debt, and a caller that cannot wait is refused.
  const big = await throttle.reserve(1000);
  expect((await big.settle(9000))?.remaining).toBe(0);
  await expect(throttle.reserve(1)).rejects.toBeInstanceOf(MaxWaitExceededError);

  // Bad input, named; nothing consumed by it.
  expect(() => big.settle(1)).toThrow(/settled already/);
  const fresh = await createThrottle({ limiter, key: `${key}:fresh`, policy: TOKENS }).reserve(10);
  expect(() => fresh.settle(-5)).toThrow("settle: used must be an integer from 0 to 1000000000 (the units the call used) or undefined (not known: the reservation stands), got -5");
  expect(fresh.settled).toBe(false);
  await expect(throttle.reserve(0)).rejects.toThrow("estimate: must be an integer from 1 to 1000000000, got 0");

  // The limiter carries a refund's spend time: units spent in an earlier window do not come back.
  const policy = parsePolicy(TOKENS, "policy");
  const spent = `${key}:spent`;
  await limiter.debit(spent, [policy], 500);
  expect((await limiter.debit(spent, [policy], -500, Date.now() - 2 * 3_600_000)).remaining).toBe(9500);
  expect((await limiter.debit(spent, [policy], -500, Date.now())).remaining).toBe(10_000);
}
