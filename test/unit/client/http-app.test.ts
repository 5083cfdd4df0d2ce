import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { type RunningServer, startServer } from "../../../src/node/serve/server.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { LimiterRequestError, LimiterUnavailableError, createSemaphore, createThrottle, httpLimiter, throttledFetch } from "../../../src/client/index.js";

// The client against the real Node server (README "HTTP API"), not a stand-in: shapes and statuses must agree.
const config = parseConfig({
  policies: [
    { name: "per-second", algorithm: "sliding-log", limit: 2, period: "1s" },
    { name: "writers", algorithm: "concurrency", limit: 1, lease: "5s" },
  ],
});

let server: RunningServer;
let tokenless: RunningServer;
beforeAll(async () => {
  server = await startServer({ config, limiter: new MemoryStore(), port: 0, token: "secret" });
  tokenless = await startServer({ config, limiter: new MemoryStore(), port: 0, token: "" });
});
afterAll(async () => {
  await server.close();
  await tokenless.close();
});

describe("httpLimiter against the Node server", () => {
  it("throttles by policy name and by inline policy, reserving slots", async () => {
    const limiter = httpLimiter({ url: server.url, token: "secret" });
    const byName = createThrottle({ limiter, key: "named", policy: "per-second", maxWaitMs: 2000 });
    const startedMs = performance.now();
    const pending = Promise.all([1, 2, 3].map(() => byName.wait()));
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Two slots now, the third booked a second ahead: a caller who cannot wait is refused.
    await expect(byName.wait({ maxWaitMs: 0 })).rejects.toMatchObject({ name: "MaxWaitExceededError" });
    const waits = await pending;
    expect(waits.map((ticket) => ticket.decision.allowed)).toEqual([true, true, true]);
    // The third was booked a second after the first slot: it waits, and is let go no sooner. (Its
    // waitMs alone is that second less the time its request took to be decided, 205 ms on a loaded run.)
    expect(waits[2]!.decision.waitMs).toBeGreaterThan(0);
    expect(performance.now() - startedMs).toBeGreaterThan(900);

    const inline = createThrottle({ limiter, key: "inline", policy: { name: "tiny", algorithm: "gcra", limit: 1, period: "1m" }, maxWaitMs: 0 });
    await inline.wait();
    await expect(inline.wait()).rejects.toMatchObject({ name: "MaxWaitExceededError", retryAfterMs: expect.any(Number) });
    await limiter.reset("inline", [{ name: "tiny", algorithm: "gcra", limit: 1, periodMs: 60_000, burst: 1, leaseMs: 30_000, failMode: "closed" }]);
    await expect(inline.wait()).resolves.toBeDefined();
  });

  it("holds, extends and releases semaphore leases", async () => {
    const semaphore = createSemaphore({ limiter: httpLimiter({ url: server.url, token: "secret" }), key: "db", policy: "writers", maxWaitMs: 0 });
    const lease = await semaphore.acquire();
    await expect(semaphore.acquire()).rejects.toMatchObject({ name: "MaxWaitExceededError" });
    await lease.extend(10_000);
    expect(lease.leaseMs).toBe(10_000);
    expect(await lease.release()).toBe(true);
    const waiting = createSemaphore({ limiter: httpLimiter({ url: server.url, token: "secret" }), key: "db", policy: "writers", maxWaitMs: 2000 });
    const first = await waiting.acquire();
    const second = waiting.acquire();
    setTimeout(() => void first.release(), 50);
    await expect(second).resolves.toBeDefined();
    await (await second).release();
  });

  it("reads the server's own RateLimit headers in throttledFetch", async () => {
    // /v1/check answers 429 with Retry-After and RateLimit fields: the same parser reads them.
    const fetchCheck = throttledFetch({ maxAttempts: 2, random: () => 0 });
    const call = () =>
      fetchCheck(`${server.url}/v1/check`, {
        method: "POST",
        headers: { authorization: "Bearer secret", "content-type": "application/json" },
        body: JSON.stringify({ key: "headers", policy: { name: "slow", limit: 1, period: "1m" } }),
      });
    expect((await call()).status).toBe(200);
    // POST is not retried by default: the 429 comes back with its hint.
    const refused = await call();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("60");
  });

  it("raises typed errors: bad token, unknown policy, no token configured, server gone", async () => {
    await expect(httpLimiter({ url: server.url, token: "wrong" }).peek("k", "per-second")).rejects.toMatchObject({ name: "LimiterRequestError", status: 401 });
    const unknown = await httpLimiter({ url: server.url, token: "secret" })
      .peek("k", "nope")
      .catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(LimiterRequestError);
    expect(unknown).toMatchObject({ status: 404, detail: expect.stringContaining("nope") });
    await expect(httpLimiter({ url: tokenless.url, token: "secret" }).peek("k", "per-second")).rejects.toMatchObject({ name: "LimiterUnavailableError", status: 503 });
    const gone = httpLimiter({ url: "http://127.0.0.1:9", token: "secret", timeoutMs: 1000 });
    await expect(createThrottle({ limiter: gone, key: "k", policy: "per-second" }).wait()).rejects.toBeInstanceOf(LimiterUnavailableError);
    expect(await gone.health()).toMatchObject({ ok: false, store: "http" });
    expect(await httpLimiter({ url: server.url, token: "secret" }).health()).toEqual({ ok: true, store: "http:memory" });
  });
});
