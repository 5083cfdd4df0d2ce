// `spillway serve` in-process for the burst tests: startServer with the Node gateway in front
// of a real loopback origin, the /v1 API, and the observability `spillway serve` adds.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseConfig } from "../../../../src/config/config.js";
import type { Limiter } from "../../../../src/core/limiter.js";
import { createNodeGateway } from "../../../../src/node/http/gateway.js";
import { createNodeObservability } from "../../../../src/node/metrics/observability.js";
import { startServer } from "../../../../src/node/serve/server.js";
import { TsChild } from "../../../redis/child-processes.js";

export const TOKEN = "test-token";
/** The rate limit of every burst: a small one, so that any over-admission shows. */
export const LIMIT = 5;
/** Leases of the concurrency route. */
export const SLOTS = 2;

/** Policies and routes of a burst test, as a config file holds them; `failMode` applies to every policy. */
export function rawBurstConfig(originUrl: string, failMode: "open" | "closed") {
  return {
    origin: originUrl,
    policies: [
      { name: "five", algorithm: "fixed-window", limit: LIMIT, period: "1h", failMode },
      { name: "two-at-once", algorithm: "concurrency", limit: SLOTS, lease: "20s", failMode },
    ],
    routes: [
      { match: { path: "/burst" }, key: "header:x-k", policies: ["five"] },
      { match: { path: "/leased" }, key: "header:x-k", policies: ["two-at-once"] },
    ],
  };
}

export function burstConfig(originUrl: string, failMode: "open" | "closed") {
  return parseConfig(rawBurstConfig(originUrl, failMode));
}

/** The concurrency policy of the /leased route. */
export const LEASE_POLICY = burstConfig("http://127.0.0.1:1", "closed").catalog.get("two-at-once")!;

/** A loopback origin that counts the requests it got per `x-k`, answering after `holdMs` (or the request's `x-hold-ms`). */
export interface CountingOrigin {
  url: string;
  hits: Map<string, number>;
  total(): number;
  /** Requests it holds now (not yet answered). */
  inFlight(): number;
  /** The most it ever held at once. */
  maxInFlight(): number;
  close(): Promise<void>;
}

export async function startCountingOrigin(holdMs = 0): Promise<CountingOrigin> {
  const hits = new Map<string, number>();
  let inFlight = 0;
  let maxInFlight = 0;
  const server = http.createServer((req, res) => {
    const key = String(req.headers["x-k"] ?? "");
    hits.set(key, (hits.get(key) ?? 0) + 1);
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    const answer = () => {
      inFlight--;
      res.end("ok");
    };
    const heldMs = Number(req.headers["x-hold-ms"] ?? holdMs);
    if (heldMs > 0) setTimeout(answer, heldMs);
    else answer();
  });
  // Longer than any burst: an idle connection the gateway's agent reuses must not be closed
  // under it (a 502, which is the keep-alive race of any proxy, not what these tests are about).
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    total: () => [...hits.values()].reduce((sum, count) => sum + count, 0),
    inFlight: () => inFlight,
    maxInFlight: () => maxInFlight,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface BurstServer {
  port: number;
  origin: CountingOrigin;
  /** Free slots of the /leased route's key `key` (`x-k`), as the store has them. */
  freeSlots(key: string): Promise<number>;
  /** The Prometheus text of /metrics. */
  metrics(): Promise<string>;
  close(): Promise<void>;
}

/** The gateway and /v1 API over `limiter` (closed with the server), in front of a counting origin. */
export async function startBurstServer(limiter: Limiter, failMode: "open" | "closed", originHoldMs = 0): Promise<BurstServer> {
  const origin = await startCountingOrigin(originHoldMs);
  const config = burstConfig(origin.url, failMode);
  // Decision log lines off: a burst's denials are the point, not news.
  const observing = createNodeObservability({ config, limiter, log: () => {} });
  const fallback = createNodeGateway({ config, limiter, observer: observing.observer, log: () => {} });
  const server = await startServer({ config, limiter: observing.apiLimiter, port: 0, fallback, token: TOKEN, observability: observing.routes, drainTimeoutMs: 100 });
  return {
    port: server.port,
    origin,
    freeSlots: async (key) => (await limiter.peek(`header:x-k:${key}`, [LEASE_POLICY])).remaining,
    metrics: async () => (await observing.prometheus.scrape()).body,
    close: async () => {
      await server.close();
      await origin.close();
    },
  };
}

const FIXTURE = new URL("../../../redis/fixtures/burst-server.ts", import.meta.url);

/**
 * `spillway serve --redis` in a child process (test/redis/fixtures/burst-server.ts): its own
 * event loop, as deployed, and not the one the burst's clients and origin run on. `store`:
 * RedisStore options (url, timeoutMs, maxInFlight, …). `freeSlots` reads the store through
 * `peek` (a RedisStore on the same Redis and key prefix).
 */
export async function startServeProcess(store: Record<string, unknown>, failMode: "open" | "closed", peek: (storeKey: string) => Promise<number>, originHoldMs = 0): Promise<BurstServer> {
  const origin = await startCountingOrigin(originHoldMs);
  const child = new TsChild<never, { port?: number }>(FIXTURE, [JSON.stringify({ config: rawBurstConfig(origin.url, failMode), token: TOKEN, store })]);
  const { port } = (await child.waitFor((event) => event.port !== undefined, 30_000, "the server's port")) as { port: number };
  return {
    port,
    origin,
    freeSlots: (key) => peek(`header:x-k:${key}`),
    metrics: async () => (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text(),
    close: async () => {
      await child.stop(5000);
      await origin.close();
    },
  };
}
