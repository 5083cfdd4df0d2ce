import { problemFor, problemResponse } from "../../../src/http/problems.js";
import { StoreFaultError, StoreUnavailableError } from "../../../src/core/limiter.js";
import { describe, expect, it } from "vitest";
import { parsePolicy, resolvePolicies } from "../../../src/core/policy.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import {
  LimiterRequestError,
  LimiterUnavailableError,
  type SpillwayBinding,
  bindingLimiter,
  createSemaphore,
  createThrottle,
  httpLimiter,
} from "../../../src/client/index.js";

const catalog = new Map([
  ["per-second", parsePolicy({ name: "per-second", algorithm: "sliding-log", limit: 2, period: "1s" }, "policies.0")],
  ["writers", parsePolicy({ name: "writers", algorithm: "concurrency", limit: 1 }, "policies.1")],
]);

interface Body {
  key: string;
  policy: unknown;
  cost?: number;
  mode?: "reject" | "reserve";
  maxWaitMs?: number;
  leaseMs?: number;
  leaseId?: string;
}

/** A stand-in for the Spillway HTTP API (README "HTTP API") over a MemoryStore, with the server's own policy resolution. */
function fakeServer(store = new MemoryStore(), seen: Array<{ path: string; body: Body; auth: string | null }> = []) {
  const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  return async (input: Request | string | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const path = new URL(request.url).pathname;
    const body = (await request.json()) as Body;
    seen.push({ path, body, auth: request.headers.get("authorization") });
    if (request.headers.get("authorization") !== "Bearer secret") return json(401, { title: "Unauthorized", status: 401, detail: "bad token" });
    let policies;
    try {
      policies = resolvePolicies(body.policy, catalog);
    } catch (error) {
      return json(404, { title: "Not Found", status: 404, detail: (error as Error).message });
    }
    switch (path) {
      case "/v1/check": {
        const decision = await store.check(body.key, policies, { cost: body.cost ?? 1, mode: body.mode ?? "reject", maxWaitMs: body.maxWaitMs ?? 0 });
        return json(decision.allowed ? 200 : 429, decision);
      }
      case "/v1/peek":
        return json(200, await store.peek(body.key, policies));
      case "/v1/acquire": {
        const result = await store.acquire(body.key, policies, { maxWaitMs: body.maxWaitMs ?? 0, leaseMs: body.leaseMs });
        return json(result.acquired ? 200 : 429, result);
      }
      case "/v1/release":
        return json(200, await store.release(body.key, policies, body.leaseId!));
      case "/v1/extend":
        return json(200, await store.extend(body.key, policies, body.leaseId!, body.leaseMs));
      default:
        return json(404, { detail: "no route" });
    }
  };
}

describe("httpLimiter", () => {
  it("sends policy names and inline policies with the bearer token, and reads 200 and 429 as decisions", async () => {
    const seen: Array<{ path: string; body: Body; auth: string | null }> = [];
    const limiter = httpLimiter({ url: "http://limits.test/", token: "secret", fetch: fakeServer(new MemoryStore(), seen) });
    const throttle = createThrottle({ limiter, key: "github", policy: "per-second", maxWaitMs: 0 });
    await throttle.wait();
    await throttle.wait();
    const refused = (await throttle.wait().catch((error: unknown) => error)) as { name: string; retryAfterMs: number };
    expect(refused.name).toBe("MaxWaitExceededError");
    expect(refused.retryAfterMs).toBeGreaterThan(900);
    // 1 s, plus at most one of the sliding log's buckets (⌈1000 / 64⌉ = 16 ms).
    expect(refused.retryAfterMs).toBeLessThanOrEqual(1016);
    expect(seen[0]).toEqual({ path: "/v1/check", auth: "Bearer secret", body: { key: "github", policy: "per-second", cost: 1, mode: "reserve", maxWaitMs: 0 } });

    const inline = createThrottle({ limiter, key: "k", policy: { name: "per-second", algorithm: "sliding-log", limit: 2, period: "1s" } });
    await inline.wait();
    expect(seen.at(-1)!.body.policy).toEqual({ name: "per-second", algorithm: "sliding-log", limit: 2, period: 1000, failMode: "closed" });
  });

  it("drives a semaphore through acquire, extend and release", async () => {
    const limiter = httpLimiter({ url: "http://limits.test", token: "secret", fetch: fakeServer() });
    const semaphore = createSemaphore({ limiter, key: "db", policy: "writers", maxWaitMs: 0 });
    const lease = await semaphore.acquire();
    await expect(semaphore.acquire()).rejects.toMatchObject({ name: "MaxWaitExceededError" });
    await lease.extend(5000);
    expect(lease.leaseMs).toBe(5000);
    expect(await lease.release()).toBe(true);
    await expect(semaphore.acquire()).resolves.toBeDefined();
  });

  it("maps 503, 5xx, network errors and garbage to LimiterUnavailableError", async () => {
    const answer = (response: Response | Error) => httpLimiter({ url: "http://limits.test", token: "secret", fetch: async () => (response instanceof Error ? Promise.reject(response) : response) });
    const check = (limiter: ReturnType<typeof httpLimiter>) => createThrottle({ limiter, key: "k", policy: "per-second" }).wait();
    const problem = new Response(JSON.stringify({ title: "Service Unavailable", status: 503, detail: "store unavailable: redis timeout" }), { status: 503 });
    await expect(check(answer(problem))).rejects.toMatchObject({ name: "LimiterUnavailableError", status: 503, message: /redis timeout/ });
    await expect(check(answer(new Response("oops", { status: 502 })))).rejects.toBeInstanceOf(LimiterUnavailableError);
    await expect(check(answer(new TypeError("fetch failed")))).rejects.toMatchObject({ name: "LimiterUnavailableError", message: /unreachable: fetch failed/ });
    await expect(check(answer(new Response("<html>", { status: 200 })))).rejects.toBeInstanceOf(LimiterUnavailableError);
    await expect(check(answer(new Response('{"hello":1}', { status: 200 })))).rejects.toBeInstanceOf(LimiterUnavailableError);
  });

  it("tells a store fault (never failed open) from an unavailable store, from the server's own problem bodies", async () => {
    const answer = (response: Response) => httpLimiter({ url: "http://limits.test", token: "secret", fetch: async () => response });
    const check = (limiter: ReturnType<typeof httpLimiter>) => createThrottle({ limiter, key: "k", policy: "per-second" }).wait();
    const fault = problemResponse(problemFor(new StoreFaultError("CROSSSLOT Keys in request don't hash to the same slot")));
    await expect(check(answer(fault))).rejects.toBeInstanceOf(StoreFaultError);
    const down = problemResponse(problemFor(new StoreUnavailableError("redis timeout")));
    await expect(check(answer(down))).rejects.toBeInstanceOf(LimiterUnavailableError);
  });

  it("gives up after timeoutMs", async () => {
    const hanging = (_input: Request | string | URL, init?: RequestInit) =>
      new Promise<Response>((_resolve, reject) => init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
    const limiter = httpLimiter({ url: "http://limits.test", token: "secret", fetch: hanging, timeoutMs: 20 });
    await expect(limiter.check("k", "per-second", { cost: 1, mode: "reject", maxWaitMs: 0 })).rejects.toMatchObject({ name: "LimiterUnavailableError", message: /no answer within 20 ms/ });
  });

  it("maps 4xx to LimiterRequestError with the server's detail", async () => {
    const limiter = httpLimiter({ url: "http://limits.test", token: "wrong", fetch: fakeServer() });
    await expect(limiter.peek("k", "per-second")).rejects.toMatchObject({ name: "LimiterRequestError", status: 401, detail: "bad token" });
    const unknown = httpLimiter({ url: "http://limits.test", token: "secret", fetch: fakeServer() });
    const error = await unknown.peek("k", "nope").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LimiterRequestError);
    expect((error as LimiterRequestError).detail).toMatch(/no policy named "nope"/);
  });

  it("names bad options", () => {
    expect(() => httpLimiter({ url: "limits.test", token: "t" })).toThrow(/^httpLimiter: url: must be an http\(s\) URL, got "limits.test"/);
    expect(() => httpLimiter({ url: "http://x", token: "" })).toThrow("httpLimiter: token: must be a non-empty string (the server's SPILLWAY_TOKEN), got \"\"");
    expect(() => httpLimiter({ url: "http://x", token: "t", timeoutMs: 0 })).toThrow(/^httpLimiter: timeoutMs:/);
    expect(() => createThrottle({ limiter: httpLimiter({ url: "http://x", token: "t" }), key: "k", policy: "Bad Name" })).toThrow(/^policy: must match/);
  });
});

describe("bindingLimiter", () => {
  function binding(store = new MemoryStore()): SpillwayBinding {
    return {
      check: async (request) =>
        request.mode === "debit"
          ? store.debit(request.key, resolvePolicies(request.policy, catalog), request.cost ?? 1)
          : store.check(request.key, resolvePolicies(request.policy, catalog), { cost: request.cost ?? 1, mode: request.mode ?? "reject", maxWaitMs: request.maxWaitMs ?? 0 }),
      peek: async (request) => store.peek(request.key, resolvePolicies(request.policy, catalog)),
      reset: async (request) => store.reset(request.key, resolvePolicies(request.policy, catalog)),
      acquire: async (request) => store.acquire(request.key, resolvePolicies(request.policy, catalog), { maxWaitMs: request.maxWaitMs ?? 0, leaseMs: request.leaseMs }),
      release: async (request) => store.release(request.key, resolvePolicies(request.policy, catalog), request.leaseId),
      extend: async (request) => store.extend(request.key, resolvePolicies(request.policy, catalog), request.leaseId, request.leaseMs),
    };
  }

  it("throttles through RPC with policy names", async () => {
    const throttle = createThrottle({ limiter: bindingLimiter(binding()), key: "k", policy: "per-second", maxWaitMs: 0 });
    await throttle.wait();
    await throttle.wait();
    await expect(throttle.wait()).rejects.toMatchObject({ name: "MaxWaitExceededError" });
  });

  it("tells an unreachable binding from bad input", async () => {
    const failing = (error: unknown): SpillwayBinding => ({ ...binding(), check: async () => Promise.reject(error) });
    const check = (rpc: SpillwayBinding) => bindingLimiter(rpc).check("k", "per-second", { cost: 1, mode: "reject", maxWaitMs: 0 });
    await expect(check(failing(new Error("Network connection lost.")))).rejects.toBeInstanceOf(LimiterUnavailableError);
    await expect(check(failing(Object.assign(new Error("redis eval failed: connect ECONNREFUSED"), { remote: true })))).rejects.toBeInstanceOf(LimiterUnavailableError);
    await expect(check(failing(Object.assign(new Error("Durable Object call failed: overloaded"), { remote: true, retryable: true })))).rejects.toBeInstanceOf(LimiterUnavailableError);
    await expect(check(failing(Object.assign(new Error("policy.limit: must be a positive integer"), { remote: true })))).rejects.toMatchObject({ name: "LimiterRequestError", status: 400 });
    await expect(check(failing(Object.assign(new Error('policy: no policy named "nope" in the config'), { remote: true })))).rejects.toMatchObject({ name: "LimiterRequestError", status: 404 });
    expect(() => bindingLimiter({} as SpillwayBinding)).toThrow(/^binding: must be a Spillway service binding/);
  });
});
