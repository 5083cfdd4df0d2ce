import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PolicySpec } from "../../src/client/index.js";
import { TsChild } from "./child-processes.js";
import type { ThrottleCommand, ThrottleEvent } from "./fixtures/throttle-client.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

// spillway/client's throttle over RedisStore in 2 Node processes sharing one key: the calls
// it lets through, taken together, must fit the policy, and come about as fast as it allows.

type Child = TsChild<ThrottleCommand, ThrottleEvent>;

const KEY_PREFIX = "client-throttle:";
const FIXTURE = new URL("./fixtures/throttle-client.ts", import.meta.url);
/**
 * Starts are stamped in each process after its timer fires, a few ms after the slot the
 * store booked (by its clock) and by different amounts per process; two stamps may thus sit
 * this much closer together than their slots. A double booking is off by a whole slot.
 */
const STAMP_JITTER_MS = 25;
/** Loose upper bound on total time: timers and round trips only ever add delay. */
const SLACK_FACTOR = 1.2;

let counter = 0;
const uniqueKey = (label: string) => `${label}-${++counter}-${crypto.randomUUID()}`;

describe("client throttle over Redis, 2 processes sharing one key", () => {
  let server: RedisServer;
  const children: Child[] = [];

  beforeAll(async () => {
    server = await startRedis();
    for (let index = 0; index < 2; index++) children.push(new TsChild(FIXTURE, [server.url, KEY_PREFIX]));
    await Promise.all(children.map((child) => child.waitFor((event) => event.event === "ready", 30_000, "ready")));
  });

  afterAll(async () => {
    await Promise.all(children.map((child) => child.stop()));
    await server?.stop();
  });

  /** Both processes start `callsEach` calls at once; answers every start (epoch ms), sorted, and when "go" was sent. */
  async function runBoth(policy: PolicySpec, callsEach: number): Promise<{ goMs: number; startsMs: number[]; jitterMs: number }> {
    const key = uniqueKey(policy.name);
    const goMs = Date.now();
    for (const child of children) child.send({ id: key, key, policy, calls: callsEach, maxWaitMs: 20_000 });
    const answers = await Promise.all(children.map((child) => child.waitFor((event) => event.event !== "ready" && event.id === key, 20_000, "the calls' starts")));
    expect(answers.filter((answer) => answer.event === "error")).toEqual([]);
    const perProcess = answers.map((answer) => (answer.event === "done" ? answer.startsMs : []));
    for (const starts of perProcess) expect(starts).toHaveLength(callsEach);
    // A stalled event loop (a loaded machine) stamps late by up to its stall.
    const lateMs = Math.max(...answers.map((answer) => (answer.event === "done" ? answer.lateMs : 0)));
    return { goMs, startsMs: perProcess.flat().sort((a, b) => a - b), jitterMs: STAMP_JITTER_MS + lateMs };
  }

  it("sliding-log 5 per 1 s: no 1 s window holds more than 5 starts, and 24 calls take about 4 s", async () => {
    const [limit, periodMs, callsEach] = [5, 1000, 12];
    const { goMs, startsMs, jitterMs } = await runBoth({ name: "five-per-second", algorithm: "sliding-log", limit, period: periodMs }, callsEach);
    // Half-open windows: the (limit+1)-th start after any start lies a full period later.
    const crowded = startsMs.slice(limit).map((startMs, index) => startMs - startsMs[index]!).filter((gapMs) => gapMs < periodMs - jitterMs);
    expect(crowded).toEqual([]);
    // The fastest possible: 5 at once, then 5 more each period.
    const minimumMs = (Math.ceil(startsMs.length / limit) - 1) * periodMs;
    const totalMs = startsMs.at(-1)! - goMs;
    expect(totalMs).toBeGreaterThanOrEqual(minimumMs - STAMP_JITTER_MS);
    expect(totalMs).toBeLessThanOrEqual(minimumMs * SLACK_FACTOR + jitterMs);
  });

  it("gcra 5 per 1 s, burst 1: consecutive starts are 200 ms apart, and 12 calls take about 2.2 s", async () => {
    const [limit, periodMs, callsEach] = [5, 1000, 6];
    const intervalMs = periodMs / limit;
    const { goMs, startsMs, jitterMs } = await runBoth({ name: "evenly", algorithm: "gcra", limit, period: periodMs, burst: 1 }, callsEach);
    const tooClose = startsMs.slice(1).map((startMs, index) => startMs - startsMs[index]!).filter((gapMs) => gapMs < intervalMs - jitterMs);
    expect(tooClose).toEqual([]);
    const minimumMs = (startsMs.length - 1) * intervalMs;
    const totalMs = startsMs.at(-1)! - goMs;
    expect(totalMs).toBeGreaterThanOrEqual(minimumMs - STAMP_JITTER_MS);
    expect(totalMs).toBeLessThanOrEqual(minimumMs * SLACK_FACTOR + jitterMs);
  });
});
