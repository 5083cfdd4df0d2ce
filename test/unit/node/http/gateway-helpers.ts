import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseConfig } from "../../../../src/config/config.js";
import type { LogFn } from "../../../../src/http/limit.js";
import { createGateway } from "../../../../src/gateway/gateway.js";
import { createNodeGateway, createNodeOriginFetch, nodeClientIp } from "../../../../src/node/http/gateway.js";
import type { Limiter } from "../../../../src/core/limiter.js";
import { startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import type { OriginAgents } from "../../../../src/node/http/origin-agents.js";

export interface Running {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** A real origin on loopback, answering with `handler`. */
export async function startOrigin(handler: http.RequestListener): Promise<Running & { server: http.Server }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A Limiter of the caller's own (kind "own"), deciding through `store`: what a user passes
 * when their store is neither of Spillway's. The Node edge decides such a store's requests as
 * they come (it gathers only the memory store's to the end of a turn).
 */
export function ownStore(store: Limiter): Limiter {
  return {
    kind: "own",
    check: (key, policies, options) => store.check(key, policies, options),
    acquire: (key, policies, options) => store.acquire(key, policies, options),
    peek: (key, policies) => store.peek(key, policies),
    debit: (key, policies, cost) => store.debit(key, policies, cost),
    reset: (key, policies) => store.reset(key, policies),
    credits: (key, policy, change) => store.credits(key, policy, change),
    release: (key, policies, leaseId) => store.release(key, policies, leaseId),
    extend: (key, policies, leaseId, leaseMs) => store.extend(key, policies, leaseId, leaseMs),
    health: () => store.health(),
  };
}

export interface GatewayUnderTest extends Running {
  limiter: Limiter;
  logs: Record<string, unknown>[];
}

/** `spillway serve` in-process: startServer with the Node gateway for `raw` (a config object), over `agents` if given. */
export async function startGateway(raw: Record<string, unknown>, limiter: Limiter = new MemoryStore(), agents?: OriginAgents): Promise<GatewayUnderTest> {
  const config = parseConfig(raw);
  const logs: Record<string, unknown>[] = [];
  const log: LogFn = (entry) => logs.push(entry);
  const fallback = createNodeGateway({ config, limiter, log, agents });
  const server = await startServer({ config, limiter, port: 0, fallback, token: "test-token", drainTimeoutMs: 100 });
  return { url: server.url, port: server.port, limiter, logs, close: () => server.close() };
}

/**
 * `spillway serve`'s two node:http origin clients, each behind the real server over the given
 * pools: the node:http edge (plain traffic), and the Hono edge (request targets it rewrites).
 */
export const nodeOriginClients: [string, (raw: Record<string, unknown>, agents: OriginAgents) => Promise<GatewayUnderTest>][] = [
  ["the node:http gateway edge", (raw, agents) => startGateway(raw, new MemoryStore(), agents)],
  [
    "the Hono edge, node:http origin client",
    async (raw, agents) => {
      const config = parseConfig(raw);
      const limiter = new MemoryStore();
      const logs: Record<string, unknown>[] = [];
      const fallback = createGateway({ config, limiter, clientIpOf: nodeClientIp, fetchOrigin: createNodeOriginFetch({ agents }), log: (entry) => logs.push(entry) });
      const server = await startServer({ config, limiter, port: 0, fallback, token: "test-token", drainTimeoutMs: 100 });
      return { url: server.url, port: server.port, limiter, logs, close: () => server.close() };
    },
  ],
];

/**
 * A gateway whose origin is a loopback port nobody listens on (an origin that was started,
 * then closed). The kernel may hand that freed port to the gateway itself, which would then
 * proxy to itself: such a gateway is closed and started again.
 */
export async function startGatewayToClosedOrigin(raw: Record<string, unknown>, limiter?: Limiter): Promise<GatewayUnderTest & { closedPort: number }> {
  for (;;) {
    const closed = await startOrigin((_req, res) => res.end());
    await closed.close();
    const gateway = await startGateway({ ...raw, origin: closed.url }, limiter);
    if (gateway.port !== closed.port) return { ...gateway, closedPort: closed.port };
    await gateway.close();
  }
}

/** A raw HTTP/1.1 exchange on a fresh socket: what was sent is exactly `text`. */
export async function rawExchange(port: number, text: string): Promise<string> {
  const net = await import("node:net");
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(text));
    let answer = "";
    socket.setEncoding("latin1");
    socket.on("data", (data) => {
      answer += data;
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(answer));
    setTimeout(() => socket.end(), 2000);
  });
}

/** node:http request that lets a test set any header (fetch refuses Connection, Keep-Alive, TE...). */
export function request(
  url: string,
  options: { method?: string; headers?: http.OutgoingHttpHeaders; body?: string | Buffer } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; rawHeaders: string[]; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(url, { method: options.method ?? "GET", headers: options.headers, agent: false }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
      incoming.on("end", () => resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, rawHeaders: incoming.rawHeaders, body: Buffer.concat(chunks) }));
      incoming.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end(options.body);
  });
}

/** Polls until `condition` holds (background work like a lease release), failing after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A promise with its resolve function, for lock-step streaming tests. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export const policies = [
  { name: "three", algorithm: "fixed-window", limit: 3, period: "1h" },
  { name: "slot", algorithm: "concurrency", limit: 1, lease: "30s" },
  { name: "spaced", algorithm: "gcra", limit: 5, period: "1s", burst: 1 },
  { name: "big", algorithm: "fixed-window", limit: 10000, period: "1h" },
];
