// Overload is not an outage (issue 22): the call bound (CallQueue), the shed rule (an
// OverloadedError never fails open), its 503, and the --max-inflight flag.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { httpLimiter } from "../../../src/client/limiters.js";
import { parsePolicy } from "../../../src/core/policy.js";
import type { Decision } from "../../../src/core/types.js";
import { problemFor, problemResponse } from "../../../src/http/problems.js";
import { OverloadedError, StoreUnavailableError, applyFailMode, mayFailOpen } from "../../../src/core/limiter.js";
import { parseServeArgs } from "../../../src/node/args/serve.js";
import { toRpcError } from "../../../src/service/rpc-errors.js";
import { CallQueue } from "../../../src/stores/call-queue.js";
import { DurableObjectStore, type KeyLimiterNamespace } from "../../../src/stores/durable-object.js";
import { OVERLOADED_TYPE } from "../../../src/core/wire.js";

const open = parsePolicy({ name: "open", algorithm: "fixed-window", limit: 5, period: "1h", failMode: "open" }, "policy");

/** A call that ends when the test says so. */
function deferred() {
  let settle!: () => void;
  const done = new Promise<void>((resolve) => (settle = resolve));
  return { done, settle };
}

describe("CallQueue", () => {
  it("starts calls at once up to maxInFlight, then in arrival order as slots free", async () => {
    const queue = new CallQueue({ maxInFlight: 2, maxQueued: 10, queueTimeoutMs: 10_000 });
    const started: number[] = [];
    const calls = Array.from({ length: 5 }, () => deferred());
    const run = (i: number) => {
      const start = () => {
        started.push(i);
        return calls[i]!.done.then(() => i);
      };
      if (queue.tryTake()) return start();
      return queue.wait(start);
    };
    const results = [0, 1, 2, 3, 4].map(run);
    expect(started).toEqual([0, 1]);
    expect(queue.counts()).toEqual({ inFlight: 2, queued: 3, shed: 0 });
    // A newcomer waits behind the queue even when a slot is free for a moment (FIFO).
    calls[1]!.settle();
    await results[1];
    queue.done();
    expect(started).toEqual([0, 1, 2]);
    expect(queue.tryTake()).toBe(false);
    for (const i of [0, 2, 3, 4]) {
      calls[i]!.settle();
      await results[i];
      queue.done();
    }
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(queue.counts()).toEqual({ inFlight: 0, queued: 0, shed: 0 });
  });

  it("sheds with OverloadedError when the queue is full, and when a call waits past queueTimeoutMs; says so once each way", async () => {
    const lines: string[] = [];
    const queue = new CallQueue({ maxInFlight: 1, maxQueued: 2, queueTimeoutMs: 30, onShedding: (shedding, detail) => lines.push(`${shedding} ${detail}`) });
    expect(queue.tryTake()).toBe(true);
    const never = () => Promise.resolve("started");
    const waiting = [queue.wait(never), queue.wait(never)];
    const full = await queue.wait(never).catch((error: unknown) => error);
    expect(full).toBeInstanceOf(OverloadedError);
    expect((full as Error).message).toContain("maxQueued 2");
    for (const late of await Promise.allSettled(waiting)) {
      expect(late.status).toBe("rejected");
      expect((late as PromiseRejectedResult).reason).toBeInstanceOf(OverloadedError);
    }
    expect(queue.counts()).toEqual({ inFlight: 1, queued: 0, shed: 3 });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^true /);
    expect(lines[1]).toMatch(/^false the queue has drained/);
    queue.done();
    expect(queue.tryTake()).toBe(true);
  });

  it("refuses bounds that are not whole numbers, naming them", () => {
    expect(() => new CallQueue({ maxInFlight: 0 })).toThrow("maxInFlight must be an integer ≥ 1, got 0");
    expect(() => new CallQueue({ queueTimeoutMs: 1.5 })).toThrow("queueTimeoutMs must be an integer ≥ 1, got 1.5");
  });
});

describe("shedding never admits", () => {
  it("failMode open admits on an unreachable store, never on an overload", async () => {
    expect(mayFailOpen([open], new StoreUnavailableError("down"))).toBe(true);
    expect(mayFailOpen([open], new OverloadedError("shed"))).toBe(false);
    const shed = await applyFailMode([open], () => Promise.reject(new OverloadedError("shed"))).catch((error: unknown) => error);
    expect(shed).toBeInstanceOf(OverloadedError);
    const failedOpen: Decision = await applyFailMode([open], () => Promise.reject(new StoreUnavailableError("down")));
    expect(failedOpen.failedOpen).toBe(true);
  });

  it("is a 503 with Retry-After and the overloaded problem type", async () => {
    const body = problemFor(new OverloadedError("a store call waited too long"));
    expect(body).toMatchObject({ status: 503, type: OVERLOADED_TYPE });
    expect(body.detail).toContain("nothing was decided or admitted");
    const response = problemResponse(body);
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("1");
    expect(toRpcError(new OverloadedError("shed"))).toMatchObject({ message: "overloaded: shed" });
  });

  it("a Durable Object's overloaded error is an OverloadedError; other failures stay StoreUnavailableError", async () => {
    const failing = (error: Error): KeyLimiterNamespace => ({ getByName: () => ({ check: () => Promise.reject(error) }) as never });
    const overloaded = Object.assign(new Error("Durable Object is overloaded. Too many requests queued."), { overloaded: true });
    const shed = await new DurableObjectStore(failing(overloaded)).check("k", [open], { cost: 1, mode: "reject", maxWaitMs: 0 }).catch((error: unknown) => error);
    expect(shed).toBeInstanceOf(OverloadedError);
    const reset = await new DurableObjectStore(failing(new Error("reset")), { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 }).check("k", [open], { cost: 1, mode: "reject", maxWaitMs: 0 }).catch((error: unknown) => error);
    expect(reset).toBeInstanceOf(StoreUnavailableError);
  });
});

describe("the HTTP client", () => {
  let server: http.Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it("turns a shed 503 into OverloadedError, which no failMode admits on", async () => {
    server = http.createServer((_req, res) => {
      res.writeHead(503, { "content-type": "application/problem+json", "retry-after": "1" });
      res.end(JSON.stringify(problemFor(new OverloadedError("shed"))));
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const limiter = httpLimiter({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: "t" });
    const error = await limiter.check("k", "per-minute", { cost: 1, mode: "reject", maxWaitMs: 0 }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(OverloadedError);
    expect(error).not.toBeInstanceOf(StoreUnavailableError);
  });
});

describe("spillway serve --max-inflight", () => {
  it("sets the Redis store's bound, and is refused naming the flag when it is not a positive integer or the store is memory", () => {
    expect(parseServeArgs(["--config", "c.json", "--redis", "redis://127.0.0.1:6379", "--max-inflight", "64"], {}).store).toEqual({ kind: "redis", url: "redis://127.0.0.1:6379", maxInFlight: 64 });
    expect(parseServeArgs(["--config", "c.json", "--redis", "redis://127.0.0.1:6379"], {}).store).toEqual({ kind: "redis", url: "redis://127.0.0.1:6379" });
    expect(() => parseServeArgs(["--config", "c.json", "--redis", "redis://h:1", "--max-inflight", "0"], {})).toThrow('--max-inflight: must be a positive integer, got "0"');
    expect(() => parseServeArgs(["--config", "c.json", "--store", "memory", "--max-inflight", "8"], {})).toThrow("--max-inflight: only applies to Redis");
  });
});
