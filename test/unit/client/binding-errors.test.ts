import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { type Limiter, StoreFaultError, StoreUnavailableError, applyFailMode } from "../../../src/core/limiter.js";
import { rpcAnswer, toRpcError } from "../../../src/service/rpc-errors.js";
import { STORE_FAULT_PREFIX, STORE_UNAVAILABLE_PREFIX } from "../../../src/core/wire.js";
import { SpillwayService } from "../../../src/service/service.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { LimiterRequestError, LimiterUnavailableError, type SpillwayBinding, bindingLimiter, createSemaphore, createThrottle } from "../../../src/client/index.js";

// The service-binding error path without workerd: a real SpillwayService, the entrypoint's
// own translation (rpcAnswer), and a "wire" that drops the error's class and marks it
// remote, as workerd does, so only the message reaches bindingLimiter.

const config = parseConfig({
  policies: [
    { name: "per-second", algorithm: "sliding-log", limit: 2, period: "1s" },
    { name: "writers", algorithm: "concurrency", limit: 1 },
  ],
});

/** What workerd hands the caller for an error the callee threw: message and name only, plus `remote`. */
function overTheWire(error: unknown): Error {
  const sent = error as Error;
  return Object.assign(new Error(sent.message), { remote: true });
}

/** SpillwayRpc's methods over `service`, with the error translation they use. */
function fakeBinding(service: SpillwayService): SpillwayBinding {
  const call = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await rpcAnswer(run);
    } catch (error) {
      throw overTheWire(error);
    }
  };
  return {
    check: (request) => call(async () => (await service.check(request)).decision),
    peek: (request) => call(async () => (await service.peek(request)).decision),
    reset: (request) => call(() => service.reset(request)),
    acquire: (request) => call(() => service.acquire(request)),
    release: (request) => call(() => service.release(request)),
    extend: (request) => call(() => service.extend(request)),
  };
}

/** A store whose every call fails with `error`. */
function failingStore(error: () => Error): Limiter {
  const fail = () => Promise.reject(error());
  return { kind: "failing", check: fail, peek: fail, debit: fail, reset: fail, acquire: fail, release: fail, extend: fail, credits: fail, health: async () => ({ ok: false, store: "failing" }) };
}

const unavailable = () => new StoreUnavailableError("redis eval failed: connect ECONNREFUSED 127.0.0.1:6379");
const fault = () => new StoreFaultError("redis eval failed: WRONGTYPE Operation against a key holding the wrong kind of value");

describe("toRpcError", () => {
  it("marks store failures with a stable prefix and passes other errors unchanged", () => {
    const down = toRpcError(unavailable()) as Error;
    expect(down.message).toBe(`${STORE_UNAVAILABLE_PREFIX}redis eval failed: connect ECONNREFUSED 127.0.0.1:6379`);
    expect(down).not.toBeInstanceOf(StoreUnavailableError);
    expect((toRpcError(fault()) as Error).message.startsWith(STORE_FAULT_PREFIX)).toBe(true);
    const badInput = new TypeError("policy.limit: must be a positive integer");
    expect(toRpcError(badInput)).toBe(badInput);
  });
});

describe("bindingLimiter error mapping over a fake binding", () => {
  it("store unavailable (failMode closed) → LimiterUnavailableError", async () => {
    const limiter = bindingLimiter(fakeBinding(new SpillwayService(failingStore(unavailable), config)));
    const throttle = createThrottle({ limiter, key: "k", policy: "per-second" });
    const error = await throttle.wait().then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(LimiterUnavailableError);
    expect((error as Error).message).toContain(`${STORE_UNAVAILABLE_PREFIX}redis eval failed: connect ECONNREFUSED`);
    const semaphore = createSemaphore({ limiter, key: "k", policy: "writers" });
    await expect(semaphore.acquire()).rejects.toBeInstanceOf(LimiterUnavailableError);
  });

  it("store fault → StoreFaultError, which failMode open never turns into an admission", async () => {
    const limiter = bindingLimiter(fakeBinding(new SpillwayService(failingStore(fault), config)));
    const open = parsePolicy({ name: "lenient", limit: 5, period: "1s", failMode: "open" }, "policy");
    const checkFailingOpen = () => applyFailMode([open], () => limiter.check("k", open, { cost: 1, mode: "reject", maxWaitMs: 0 }));
    const error = await checkFailingOpen().then(() => undefined, (caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreFaultError);
    expect(error).not.toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain(`${STORE_FAULT_PREFIX}redis eval failed: WRONGTYPE`);
    // The control: the same failMode does admit when the store is merely unreachable.
    const down = bindingLimiter(fakeBinding(new SpillwayService(failingStore(unavailable), config)));
    const admitted = await applyFailMode([open], () => down.check("k", open, { cost: 1, mode: "reject", maxWaitMs: 0 }));
    expect(admitted).toMatchObject({ allowed: true, failedOpen: true });
  });

  it("accepts a callable binding, as loopback bindings (ctx.exports) are", async () => {
    const callable = Object.assign(() => undefined, fakeBinding(new SpillwayService(new MemoryStore(), config)));
    const throttle = createThrottle({ limiter: bindingLimiter(callable), key: "k", policy: "per-second", maxWaitMs: 0 });
    await expect(throttle.wait()).resolves.toMatchObject({ decision: { allowed: true } });
  });

  it("bad input → LimiterRequestError whose detail names the field", async () => {
    const limiter = bindingLimiter(fakeBinding(new SpillwayService(new MemoryStore(), config)));
    const unknown = await createThrottle({ limiter, key: "k", policy: "nope" }).wait().then(() => undefined, (caught: unknown) => caught);
    expect(unknown).toBeInstanceOf(LimiterRequestError);
    expect(unknown).toMatchObject({ status: 404, detail: expect.stringMatching(/^policy: no policy named "nope"/) });
    // A rate policy is no semaphore: only the server knows what "per-second" is.
    const notConcurrency = await createSemaphore({ limiter, key: "k", policy: "per-second" }).acquire().then(() => undefined, (caught: unknown) => caught);
    expect(notConcurrency).toMatchObject({ name: "LimiterRequestError", status: 400, detail: expect.stringMatching(/^policy: "per-second" is sliding-log/) });
    // The client allows longer waits than the server does: the server's bound names the field.
    const tooLong = await createSemaphore({ limiter, key: "k", policy: "writers" }).acquire({ maxWaitMs: 400_000 }).then(() => undefined, (caught: unknown) => caught);
    expect(tooLong).toMatchObject({ name: "LimiterRequestError", status: 400, detail: expect.stringMatching(/^maxWaitMs: /) });
  });
});
