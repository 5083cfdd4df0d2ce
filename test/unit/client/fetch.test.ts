import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MemoryStore } from "../../../src/stores/memory.js";
import { type FetchLike, type RetryEvent, createThrottle, throttledFetch } from "../../../src/client/index.js";

const T0 = Date.parse("2025-01-01T00:00:00Z");

/** A scripted origin: answers in order, records when and what was asked. */
function origin(...answers: Array<() => Response | Promise<Response>>) {
  const calls: Array<{ atMs: number; method: string; body: string }> = [];
  const fetch: FetchLike = async (input, init) => {
    const request = new Request(input, init);
    calls.push({ atMs: Date.now() - T0, method: request.method, body: await request.text() });
    const next = answers[Math.min(calls.length - 1, answers.length - 1)]!;
    return next();
  };
  return { fetch, calls };
}
const ok = () => new Response("ok");
const tooMany = (headers: Record<string, string> = {}) => () => new Response("slow down", { status: 429, headers });
const half = () => 0.5;

async function settle<T>(promise: Promise<T>, ms = 120_000): Promise<T> {
  await vi.advanceTimersByTimeAsync(ms);
  return promise;
}

describe("throttledFetch", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("waits as Retry-After says (delta-seconds), jitter only adding", async () => {
    const { fetch, calls } = origin(tooMany({ "retry-after": "2" }), ok);
    const retries: RetryEvent[] = [];
    const response = await settle(throttledFetch({ fetch, random: half, onRetry: (event) => retries.push(event) })("https://api.test/items"));
    expect(response.status).toBe(200);
    expect(calls.map((call) => call.atMs)).toEqual([0, 2100]);
    expect(retries).toEqual([{ attempt: 1, delayMs: 2100, status: 429 }]);
  });

  it("waits until a Retry-After HTTP-date", async () => {
    const { fetch, calls } = origin(tooMany({ "retry-after": new Date(T0 + 5000).toUTCString() }), ok);
    await settle(throttledFetch({ fetch, random: () => 0 })("https://api.test/items"));
    expect(calls.map((call) => call.atMs)).toEqual([0, 5000]);
  });

  it("backs off exponentially with jitter when the server gives no hint", async () => {
    const { fetch, calls } = origin(() => new Response("", { status: 503 }), () => new Response("", { status: 503 }), ok);
    await settle(throttledFetch({ fetch, random: () => 1, baseDelayMs: 100 })("https://api.test/"));
    expect(calls.map((call) => call.atMs)).toEqual([0, 100, 300]);
  });

  it("retries network errors of idempotent requests", async () => {
    let failures = 1;
    const fetch: FetchLike = async () => (failures-- > 0 ? Promise.reject(new TypeError("fetch failed")) : new Response("ok"));
    expect((await settle(throttledFetch({ fetch, random: half })("https://api.test/"))).status).toBe(200);
    const post = throttledFetch({ fetch: async () => Promise.reject(new TypeError("fetch failed")) });
    await expect(post("https://api.test/", { method: "POST", body: "x" })).rejects.toThrow("fetch failed");
  });

  it("bounds the number of attempts and returns the last answer", async () => {
    const { fetch, calls } = origin(tooMany({ "retry-after": "1" }));
    const response = await settle(throttledFetch({ fetch, maxAttempts: 3, random: () => 0 })("https://api.test/"));
    expect(response.status).toBe(429);
    expect(calls).toHaveLength(3);
  });

  it("bounds the total time", async () => {
    const { fetch, calls } = origin(tooMany({ "retry-after": "4" }));
    const response = await settle(throttledFetch({ fetch, maxAttempts: 10, maxTotalMs: 10_000, random: () => 0 })("https://api.test/"));
    expect(response.status).toBe(429);
    expect(calls.map((call) => call.atMs)).toEqual([0, 4000, 8000]);
  });

  it("returns at once when the server asks for longer than maxDelayMs", async () => {
    const { fetch, calls } = origin(tooMany({ "retry-after": "3600" }), ok);
    const response = await settle(throttledFetch({ fetch, maxDelayMs: 60_000 })("https://api.test/"), 0);
    expect(response.status).toBe(429);
    expect(calls).toHaveLength(1);
  });

  it("ignores a garbage Retry-After and backs off instead", async () => {
    const { fetch, calls } = origin(tooMany({ "retry-after": "soon-ish" }), ok);
    await settle(throttledFetch({ fetch, random: () => 0, baseDelayMs: 100 })("https://api.test/"));
    expect(calls.map((call) => call.atMs)).toEqual([0, 50]);
  });

  it("retries POST only when asked, and resends the same body", async () => {
    const plain = origin(tooMany({ "retry-after": "1" }), ok);
    const refused = await settle(throttledFetch({ fetch: plain.fetch })("https://api.test/", { method: "POST", body: "payload" }));
    expect(refused.status).toBe(429);
    expect(plain.calls).toHaveLength(1);

    const asked = origin(tooMany({ "retry-after": "1" }), ok);
    const response = await settle(throttledFetch({ fetch: asked.fetch, retryNonIdempotent: true })("https://api.test/", { method: "POST", body: "payload" }));
    expect(response.status).toBe(200);
    expect(asked.calls.map((call) => call.body)).toEqual(["payload", "payload"]);
  });

  it("pauses later calls when a success says no quota remains", async () => {
    const { fetch, calls } = origin(() => new Response("ok", { headers: { ratelimit: '"hourly";r=0;t=3' } }), ok);
    const fetchApi = throttledFetch({ fetch });
    await fetchApi("https://api.test/a");
    await settle(fetchApi("https://api.test/b"));
    expect(calls.map((call) => call.atMs)).toEqual([0, 3000]);
  });

  it("waits for a throttle slot before each attempt", async () => {
    const { fetch, calls } = origin(ok);
    const throttle = createThrottle({ limiter: new MemoryStore(), key: "api", policy: { name: "api", algorithm: "sliding-log", limit: 2, period: "1s" } });
    const fetchApi = throttledFetch({ fetch, throttle });
    await settle(Promise.all([1, 2, 3, 4, 5].map((n) => fetchApi(`https://api.test/${n}`))));
    // Each slot ends 1 s on, rounded up to the sliding log's 16 ms buckets.
    expect(calls.map((call) => call.atMs)).toEqual([0, 0, 1008, 1008, 2016]);
  });

  it("feeds Retry-After into the shared limiter so other callers of the key pause", async () => {
    const store = new MemoryStore();
    const policy = { name: "api", algorithm: "gcra" as const, limit: 10, period: "1s" };
    const mine = createThrottle({ limiter: store, key: "api", policy });
    const theirs = createThrottle({ limiter: store, key: "api", policy });
    const { fetch } = origin(tooMany({ "retry-after": "2" }), ok);
    const pending = throttledFetch({ fetch, throttle: mine, shareRetryAfter: true, random: () => 0 })("https://api.test/");
    await vi.advanceTimersByTimeAsync(0);
    // Another process's throttle, sharing only the store, now waits out the server's 2 s.
    const other = theirs.wait({ maxWaitMs: 10_000 });
    await vi.advanceTimersByTimeAsync(10_000);
    expect((await other).waitedMs).toBeGreaterThanOrEqual(2000);
    expect((await other).waitedMs).toBeLessThan(2200);
    expect((await pending).status).toBe(200);
  });

  it("stops waiting when aborted", async () => {
    const { fetch, calls } = origin(tooMany({ "retry-after": "10" }), ok);
    const controller = new AbortController();
    const pending = throttledFetch({ fetch })("https://api.test/", { signal: controller.signal }).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1000);
    controller.abort(new Error("user left"));
    expect(await pending).toMatchObject({ message: "user left" });
    expect(calls).toHaveLength(1);
  });

  it("names bad options", () => {
    expect(() => throttledFetch({ maxAttempts: 0 })).toThrow(/^maxAttempts: must be an integer from 1 to 100, got 0/);
    expect(() => throttledFetch({ retryStatuses: [429, 999] })).toThrow(/^retryStatuses:/);
    expect(() => throttledFetch({ shareRetryAfter: true })).toThrow(/^shareRetryAfter: needs a throttle/);
    expect(() => throttledFetch({ fetch: "fetch" as unknown as FetchLike })).toThrow(/^fetch: must be a function/);
  });
});
