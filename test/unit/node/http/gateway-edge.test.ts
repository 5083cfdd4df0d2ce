import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import type { Policy } from "../../../../src/core/types.js";
import type { Limiter } from "../../../../src/core/limiter.js";
import type { GatewayRequestEvent, OriginEvent } from "../../../../src/observe/observer.js";
import { createNodeGateway } from "../../../../src/node/http/gateway.js";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { type Running, deferred, ownStore, rawExchange, startOrigin, waitFor } from "./gateway-helpers.js";

// What `spillway serve` answers on its node:http gateway edge (plain request targets), beyond
// what the other gateway tests already hold for every edge.
describe("spillway serve's node:http gateway edge", () => {
  let origin: Running;
  let server: RunningServer;
  const requests: GatewayRequestEvent[] = [];
  const originTimes: OriginEvent[] = [];

  beforeAll(async () => {
    origin = await startOrigin((req, res) => {
      res.setHeader("set-cookie", ["a=1; Path=/", "b=2; Path=/"]);
      res.writeHead(201, "Made Here", { "content-type": "text/plain" }).end(`got ${req.url}`);
    });
    const config = parseConfig({
      origin: origin.url,
      policies: [{ name: "two", algorithm: "fixed-window", limit: 2, period: "1h" }],
      routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["two"] }],
    });
    const limiter = new MemoryStore();
    const observer = { gatewayRequest: (event: GatewayRequestEvent) => requests.push(event), originDuration: (event: OriginEvent) => originTimes.push(event) };
    const fallback = createNodeGateway({ config, limiter, observer, log: () => {} });
    server = await startServer({ config, limiter, port: 0, fallback, token: "t", drainTimeoutMs: 100 });
  });
  afterAll(async () => {
    await server?.close();
    await origin?.close();
  });

  it("keeps the origin's reason phrase and every Set-Cookie line apart", async () => {
    const answer = await rawExchange(server.port, `GET /other HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nConnection: close\r\n\r\n`);
    const head = answer.split("\r\n\r\n")[0]!;
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 201 Made Here");
    expect(head.split("\r\n").filter((line) => /^set-cookie:/i.test(line))).toEqual(["set-cookie: a=1; Path=/", "set-cookie: b=2; Path=/"]);
  });

  it("reports every answer to the observer: route and status, and the origin's time for routed requests", async () => {
    requests.length = 0;
    originTimes.length = 0;
    const statuses: number[] = [];
    for (const path of ["/api/a", "/api/a", "/api/a", "/elsewhere"]) statuses.push((await fetch(`${server.url}${path}`)).status);
    expect(statuses).toEqual([201, 201, 429, 201]);
    expect(requests).toEqual([
      { route: "0", status: 201 },
      { route: "0", status: 201 },
      { route: "0", status: 429 },
      { route: "unrouted", status: 201 },
    ]);
    expect(originTimes.map((event) => event.route)).toEqual(["0", "0"]);
    for (const event of originTimes) expect(event.durationMs).toBeGreaterThanOrEqual(0);
  });
});

describe("a client that goes away while its request is decided", () => {
  let origin: Running;
  let server: RunningServer;
  let originHits = 0;
  const requests: GatewayRequestEvent[] = [];
  const memory = new MemoryStore();
  const checksStarted: { key: string; policies: readonly Policy[] }[] = [];
  let held: ReturnType<typeof deferred<void>> | undefined;

  beforeAll(async () => {
    origin = await startOrigin((_req, res) => {
      originHits++;
      res.end("ok");
    });
    const config = parseConfig({
      origin: origin.url,
      policies: [{ name: "one-at-a-time", algorithm: "concurrency", limit: 1, lease: "1h" }],
      routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["one-at-a-time"] }],
    });
    // The caller's own store, whose decision the test holds back (as a slow store would).
    const limiter: Limiter = {
      ...ownStore(memory),
      async check(key, policies, options) {
        checksStarted.push({ key, policies });
        const decision = await memory.check(key, policies, options);
        await held?.promise;
        return decision;
      },
    };
    const fallback = createNodeGateway({ config, limiter, observer: { gatewayRequest: (event) => requests.push(event) }, log: () => {} });
    server = await startServer({ config, limiter, port: 0, fallback, token: "t", drainTimeoutMs: 100 });
  });
  afterAll(async () => {
    await server?.close();
    await origin?.close();
  });

  it("is not forwarded, and the lease it was granted is released", async () => {
    held = deferred();
    const socket = net.connect(server.port, "127.0.0.1", () => socket.write(`GET /api/a HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`));
    await waitFor(() => checksStarted.length === 1);
    socket.destroy();
    // The server sees the close before the decision is let through.
    await new Promise((resolve) => setTimeout(resolve, 100));
    held.resolve(undefined);
    held = undefined;
    await waitFor(() => requests.length === 1);
    expect(requests).toEqual([{ route: "0", status: 499 }]);
    expect(originHits).toBe(0);
    // Limit 1: the next request is admitted only if the gone client's lease was released.
    const { key, policies } = checksStarted[0]!;
    await waitFor(async () => (await memory.peek(key, policies)).remaining === 1);
    expect((await fetch(`${server.url}/api/b`)).status).toBe(200);
    expect(originHits).toBe(1);
  });
});
