// Issue 22 on the memory store: bursts through `spillway serve` (gateway and /v1/check) admit
// at most the limit, answer no 503, and leave no concurrency slot taken. The same shapes run
// on Redis in test/redis/burst.test.ts.
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { type BurstServer, SLOTS, startBurstServer } from "./burst-servers.js";
import { connectionsMixed, expectExact, expectSlotsFree, leasedBurst, pipelinedMixed } from "./burst-scenarios.js";

let server: BurstServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("memory store", () => {
  it("failMode closed: 1,000 requests in one write, then 500 keep-alive connections × 2: at most the limit per key (hot and cold), no 503", { timeout: 60_000 }, async () => {
    server = await startBurstServer(new MemoryStore(), "closed");
    const pipelined = await pipelinedMixed(server, "p-", 1000);
    expectExact(pipelined, { shedAllowed: false });
    expect(pipelined.statuses[200]! + pipelined.statuses[429]!).toBe(1000);
    const connections = await connectionsMixed(server, "c-", 500, 2);
    expectExact(connections, { shedAllowed: false });
    expect(connections.statuses[200]! + connections.statuses[429]!).toBe(1000);
  });

  it("failMode open: 1,000 requests in one write: at most the limit per key, nothing failed open", { timeout: 60_000 }, async () => {
    server = await startBurstServer(new MemoryStore(), "open");
    const pipelined = await pipelinedMixed(server, "p-", 1000);
    expectExact(pipelined, { shedAllowed: false });
    expect(pipelined.statuses[200]! + pipelined.statuses[429]!).toBe(1000);
  });
});

it("500 connections at once on a 2-slot concurrency route: never more than 2 at the origin, and every slot free after", { timeout: 60_000 }, async () => {
  server = await startBurstServer(new MemoryStore(), "closed", 5);
  const outcome = await leasedBurst(server, "l-", 500);
  expect(server.origin.maxInFlight()).toBeLessThanOrEqual(SLOTS);
  expect(outcome.statuses[200]).toBeGreaterThanOrEqual(SLOTS);
  expect(outcome.statuses[503] ?? 0).toBe(0);
  await expectSlotsFree(server, "l-");
});
