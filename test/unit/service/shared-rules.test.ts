import { afterEach, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { windowStartOf } from "../../../src/core/algorithm.js";
import { stackLeaseMs } from "../../../src/core/concurrency.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { sleep } from "../../../src/core/sleep.js";
import { ValidationError } from "../../../src/core/validation.js";
import { type Limiter, StoreFaultError, StoreUnavailableError, mayFailOpen } from "../../../src/core/limiter.js";
import { SpillwayService } from "../../../src/service/service.js";
import { MAX_KEY_BYTES, keyFitsBytes } from "../../../src/core/wire.js";

// Rules several modules share, each written once: these pin the one copy down.

const rate = parsePolicy({ name: "rate", limit: 10, period: "1s", failMode: "open" }, "policy");
const long = parsePolicy({ name: "long", algorithm: "concurrency", limit: 2, lease: "2m", failMode: "open" }, "policy");
const short = parsePolicy({ name: "short", algorithm: "concurrency", limit: 2, lease: "1m", failMode: "open" }, "policy");
const closed = parsePolicy({ name: "closed", algorithm: "concurrency", limit: 2, lease: "10s" }, "policy");

describe("stackLeaseMs", () => {
  it("is the shortest lease of the concurrency policies: a rate policy's (unused) leaseMs never shortens it", () => {
    expect(rate.leaseMs).toBe(30_000);
    expect(stackLeaseMs([rate, long, short])).toBe(60_000);
    expect(stackLeaseMs([long, rate])).toBe(120_000);
  });

  it("falls back to the shortest of all policies on a stack without a concurrency policy", () => {
    expect(stackLeaseMs([rate])).toBe(30_000);
  });
});

describe("mayFailOpen", () => {
  const unavailable = new StoreUnavailableError("connect ECONNREFUSED");
  it("admits only an unreachable store, and only when every policy fails open", () => {
    expect(mayFailOpen([rate, short], unavailable)).toBe(true);
    expect(mayFailOpen([rate, closed], unavailable)).toBe(false);
    expect(mayFailOpen([rate], new StoreFaultError("WRONGTYPE"))).toBe(false);
    expect(mayFailOpen([rate], new ValidationError("key", "is required"))).toBe(false);
  });

  it("is the service's rule for acquire too, which grants the stack's lease length", async () => {
    const down: Limiter = {
      kind: "down",
      ...Object.fromEntries(["check", "peek", "reset", "acquire", "release", "extend"].map((op) => [op, () => Promise.reject(unavailable)])),
      health: async () => ({ ok: false, store: "down" }),
    } as unknown as Limiter;
    const config = parseConfig({ policies: [
      { name: "long", algorithm: "concurrency", limit: 2, lease: "2m", failMode: "open" },
      { name: "short", algorithm: "concurrency", limit: 2, lease: "1m", failMode: "open" },
      { name: "closed", algorithm: "concurrency", limit: 2, lease: "10s" },
    ] });
    const service = new SpillwayService(down, config);
    expect(await service.acquire({ key: "k", policy: ["long", "short"] })).toMatchObject({ acquired: true, leaseMs: 60_000, failedOpen: true });
    await expect(service.acquire({ key: "k", policy: ["long", "closed"] })).rejects.toBe(unavailable);
  });
});

describe("keyFitsBytes", () => {
  it("counts UTF-8 bytes, not characters, up to MAX_KEY_BYTES", () => {
    expect(keyFitsBytes("a".repeat(MAX_KEY_BYTES))).toBe(true);
    expect(keyFitsBytes("a".repeat(MAX_KEY_BYTES + 1))).toBe(false);
    expect(keyFitsBytes("é".repeat(MAX_KEY_BYTES / 2))).toBe(true);
    expect(keyFitsBytes("é".repeat(MAX_KEY_BYTES / 2 + 1))).toBe(false);
    expect(keyFitsBytes("€".repeat(171))).toBe(false);
  });
});

describe("windowStartOf", () => {
  it("aligns to the epoch, period by period", () => {
    expect(windowStartOf(0, 1000)).toBe(0);
    expect(windowStartOf(999, 1000)).toBe(0);
    expect(windowStartOf(1000, 1000)).toBe(1000);
    expect(windowStartOf(61_234, 60_000)).toBe(60_000);
  });
});

describe("sleep", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("answers true when the time ran out and false when the signal aborts first, leaving no timer behind", async () => {
    vi.useFakeTimers();
    const ran = sleep(1000);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await ran).toBe(true);

    const controller = new AbortController();
    const cut = sleep(1000, controller.signal);
    controller.abort();
    expect(await cut).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    expect(await sleep(1000, controller.signal)).toBe(false);
  });
});
