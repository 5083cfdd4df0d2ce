import { monitorEventLoopDelay } from "node:perf_hooks";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import type { Decision, Policy } from "../../src/core/types.js";
import { StoreUnavailableError, applyFailMode } from "../../src/core/limiter.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

const TIMEOUT_MS = 50;
const open = parsePolicy({ name: "open", algorithm: "gcra", limit: 1_000_000, period: "1s", failMode: "open" }, "policy");
const closed = parsePolicy({ name: "closed", algorithm: "sliding-window", limit: 1_000_000, period: "1s" }, "policy");
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

type Outcome = { kind: "decided" | "failed-open" | "unavailable" | "other"; policy: string; latencyMs: number; atMs: number; error?: unknown };

/** Calls like the HTTP layer does: applyFailMode around a check. */
async function decideOnce(store: RedisStore, policies: Policy[], startMs: number): Promise<Outcome> {
  const begin = performance.now();
  const policy = policies[0]!.name;
  try {
    const decision: Decision = await applyFailMode(policies, () => store.check(`load-${policy}`, policies, reject));
    return { kind: decision.failedOpen ? "failed-open" : "decided", policy, latencyMs: performance.now() - begin, atMs: begin - startMs };
  } catch (error) {
    const kind = error instanceof StoreUnavailableError ? "unavailable" : "other";
    return { kind, policy, latencyMs: performance.now() - begin, atMs: begin - startMs, error };
  }
}

describe("Redis faults", () => {
  let server: RedisServer;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(() => {
    unhandled.length = 0;
    process.on("unhandledRejection", onUnhandled);
  });
  afterEach(() => {
    process.off("unhandledRejection", onUnhandled);
  });

  it("kill under load: every answer follows failMode within the timeout, then recovers within 1 s", async () => {
    const logged: string[] = [];
    const store = new RedisStore({ url: server.url, timeoutMs: TIMEOUT_MS, log: (line) => logged.push(line) });
    expect(await store.ready(10_000)).toBe(true);
    const outcomes: Outcome[] = [];
    // A stalled event loop delays every answer; that is this process, not the store.
    const loopDelay = monitorEventLoopDelay({ resolution: 5 });
    loopDelay.enable();
    const startMs = performance.now();
    let running = true;
    const worker = async (policies: Policy[]) => {
      while (running) {
        outcomes.push(await decideOnce(store, policies, startMs));
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    };
    const workers = Array.from({ length: 40 }, (_, index) => worker(index % 2 ? [open] : [closed]));

    await new Promise((resolve) => setTimeout(resolve, 400));
    await server.kill();
    const killedAtMs = performance.now() - startMs;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await store.health()).ok).toBe(false);
    // Calls that ended before the restart began met a dead server; later ones may meet the new one.
    const restartingAtMs = performance.now() - startMs;
    await server.restart();
    const restartedAtMs = performance.now() - startMs;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    running = false;
    await Promise.all(workers);

    expect(outcomes.filter((outcome) => outcome.kind === "other").map((outcome) => String(outcome.error))).toEqual([]);
    const during = outcomes.filter((outcome) => outcome.atMs > killedAtMs + 5 && outcome.atMs + outcome.latencyMs < restartingAtMs);
    expect(during.length).toBeGreaterThan(100);
    for (const outcome of during) {
      // Never a decision from nowhere: open policies admit and say so, closed ones are unavailable.
      expect(outcome.kind).toBe(outcome.policy === "open" ? "failed-open" : "unavailable");
    }
    loopDelay.disable();
    const slowest = Math.max(...outcomes.map((outcome) => outcome.latencyMs));
    expect(slowest).toBeLessThan(TIMEOUT_MS + 25 + loopDelay.max / 1e6);
    // Back within 1 s of the restart, for both policies.
    for (const policy of ["open", "closed"]) {
      const firstDecided = outcomes.find((outcome) => outcome.policy === policy && outcome.kind === "decided" && outcome.atMs > restartedAtMs);
      expect(firstDecided, policy).toBeDefined();
      expect(firstDecided!.atMs - restartedAtMs).toBeLessThan(1000);
    }
    // And correct: a fresh key counts from its full limit again.
    const three = parsePolicy({ name: "three", algorithm: "fixed-window", limit: 3, period: "1h" }, "policy");
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await store.check("after-restart", [three], reject)).allowed);
    expect(answers).toEqual([true, true, true, false]);
    expect((await store.health()).ok).toBe(true);
    expect(logged.some((line) => line.includes("unavailable"))).toBe(true);
    expect(logged.some((line) => line.includes("available again"))).toBe(true);
    expect(unhandled).toEqual([]);
    await store.close();
  });

  it("fails fast while Redis is down: no offline queue, no hanging calls", async () => {
    const store = new RedisStore({ url: server.url, timeoutMs: TIMEOUT_MS, log: () => {} });
    expect(await store.ready(10_000)).toBe(true);
    await server.kill();
    // A stalled event loop delays every answer; that is this process, not the store.
    const loopDelay = monitorEventLoopDelay({ resolution: 5 });
    loopDelay.enable();
    const begin = performance.now();
    const results = await Promise.allSettled(Array.from({ length: 500 }, () => store.check("down", [closed], reject)));
    const tookMs = performance.now() - begin;
    loopDelay.disable();
    await server.restart(); // before any assertion: the next tests need the server
    expect(tookMs).toBeLessThan(TIMEOUT_MS + 100 + loopDelay.max / 1e6);
    expect(results.every((result) => result.status === "rejected" && result.reason instanceof StoreUnavailableError)).toBe(true);
    await store.close();
    expect(unhandled).toEqual([]);
  });

  it("a stalled Redis (SIGSTOP): calls fail within the timeout, late replies go nowhere, and the next answers are right", async () => {
    const logged: string[] = [];
    const store = new RedisStore({ url: server.url, timeoutMs: TIMEOUT_MS, log: (line) => logged.push(line) });
    expect(await store.ready(10_000)).toBe(true);
    const three = parsePolicy({ name: "three", algorithm: "fixed-window", limit: 3, period: "1h" }, "policy");
    expect((await store.check("stalled", [three], reject)).remaining).toBe(2);
    const pid = server.process.pid!;
    process.kill(pid, "SIGSTOP");
    // Resumed after 500 ms in any case: a deadline that failed to fire shows as lateness.
    const resume = setTimeout(() => process.kill(pid, "SIGCONT"), 500);
    const loopDelay = monitorEventLoopDelay({ resolution: 5 });
    loopDelay.enable();
    const begin = performance.now();
    // The connection stays up: only the deadline can end these calls.
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => store.check("stalled", [three], reject)));
    clearTimeout(resume);
    process.kill(pid, "SIGCONT");
    loopDelay.disable();
    // A stalled event loop delays every answer; that is this process, not the store.
    expect(performance.now() - begin).toBeLessThan(TIMEOUT_MS + 100 + loopDelay.max / 1e6);
    for (const result of results) {
      expect(result.status).toBe("rejected");
      const reason = (result as PromiseRejectedResult).reason as Error;
      expect(reason).toBeInstanceOf(StoreUnavailableError);
      expect(reason.message).toBe(`redis single did not answer within ${TIMEOUT_MS} ms`);
    }
    expect(logged.some((line) => line.includes("unavailable"))).toBe(true);
    // Redis runs the 20 calls it was sent once it resumes (a timed-out call may have counted:
    // the caller was told "unavailable", never "admitted"); their replies must not answer
    // anybody else. Another key's first check sees a fresh window, this key's a full one.
    expect((await store.check("after-stall", [three], reject)).remaining).toBe(2);
    const stalled = await store.peek("stalled", [three]);
    expect([stalled.allowed, stalled.remaining]).toEqual([false, 0]);
    expect(logged.some((line) => line.includes("available again"))).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(unhandled).toEqual([]);
    await store.close();
  });

  it("a stalled Redis and a stack of two limits (stack.lua): calls fail within the timeout, and the calls Redis runs late stay all-or-nothing", async () => {
    const store = new RedisStore({ url: server.url, timeoutMs: TIMEOUT_MS, log: () => {} });
    expect(await store.ready(10_000)).toBe(true);
    // GCRA (stepped, as the fixed window is): no window edge for a run to straddle.
    const three = parsePolicy({ name: "three", algorithm: "gcra", limit: 3, period: "1h" }, "policy");
    const wide = parsePolicy({ name: "wide", algorithm: "gcra", limit: 100, period: "1h" }, "policy");
    expect((await store.check("stalled-stack", [three, wide], reject)).remaining).toBe(2);
    const pid = server.process.pid!;
    process.kill(pid, "SIGSTOP");
    const resume = setTimeout(() => process.kill(pid, "SIGCONT"), 500);
    const loopDelay = monitorEventLoopDelay({ resolution: 5 });
    loopDelay.enable();
    const begin = performance.now();
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => store.check("stalled-stack", [three, wide], reject)));
    clearTimeout(resume);
    process.kill(pid, "SIGCONT");
    loopDelay.disable();
    expect(performance.now() - begin).toBeLessThan(TIMEOUT_MS + 100 + loopDelay.max / 1e6);
    for (const result of results) {
      expect(result.status).toBe("rejected");
      expect(String((result as PromiseRejectedResult).reason)).toBe(`StoreUnavailableError: redis stack did not answer within ${TIMEOUT_MS} ms`);
    }
    // Redis runs the 20 late: two fit the tight limit, and the 18 it refuses take nothing from
    // the wide one either.
    const after = await store.peek("stalled-stack", [three, wide]);
    expect(after.policies.map((one) => one.remaining)).toEqual([0, 97]);
    expect((await store.check("after-stalled-stack", [three, wide], reject)).remaining).toBe(2);
    await store.close();
  });

  it("a stalled Redis and one call alone (its write out at once, its clock started without waiting a turn): it fails within the timeout", async () => {
    const store = new RedisStore({ url: server.url, timeoutMs: TIMEOUT_MS, log: () => {} });
    expect(await store.ready(10_000)).toBe(true);
    const one = parsePolicy({ name: "one-call", algorithm: "gcra", limit: 10, period: "1s" }, "policy");
    expect((await store.check("alone", [one], reject)).allowed).toBe(true);
    const pid = server.process.pid!;
    process.kill(pid, "SIGSTOP");
    const resume = setTimeout(() => process.kill(pid, "SIGCONT"), 3000);
    const begin = performance.now();
    try {
      const error = await store.check("alone", [one], reject).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      // Failed on its own clock, long before Redis came back (a call whose clock waited for
      // another call or for the reply would end at the resume, 3 s): the slack is a loaded
      // machine's late timers, not part of the timeout.
      expect(performance.now() - begin).toBeLessThan(TIMEOUT_MS + 750);
    } finally {
      clearTimeout(resume);
      process.kill(pid, "SIGCONT");
    }
    expect((await store.check("alone-after", [one], reject)).allowed).toBe(true);
    await store.close();
  });

  it("SCRIPT FLUSH and FUNCTION FLUSH mid-run: no caller sees an error and nothing is counted twice", async () => {
    // A reload costs one more round trip; the timeout is generous so that a loaded machine's
    // stalls (not the reload) cannot fail a call: this test is about errors and double counts.
    const store = new RedisStore({ url: server.url, timeoutMs: 1000 });
    expect(await store.ready(10_000)).toBe(true);
    const admin = new Redis(server.url);
    const counter = parsePolicy({ name: "count", algorithm: "fixed-window", limit: 100_000, period: "1h" }, "policy");
    let flushing = true;
    let flushes = 0;
    const flusher = (async () => {
      while (flushing) {
        await (flushes % 2 === 0 ? admin.function("FLUSH") : admin.script("FLUSH"));
        flushes++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const failures: unknown[] = [];
    const waves = 60;
    const perWave = 50;
    for (let wave = 0; wave < waves; wave++) {
      const results = await Promise.allSettled(Array.from({ length: perWave }, () => store.check("flushed", [counter], reject)));
      for (const result of results) if (result.status === "rejected") failures.push(result.reason);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    flushing = false;
    await flusher;
    expect(failures).toEqual([]);
    expect(flushes).toBeGreaterThan(10);
    expect((await store.peek("flushed", [counter])).remaining).toBe(100_000 - waves * perWave);
    admin.disconnect();
    await store.close();
    expect(unhandled).toEqual([]);
  });
});
