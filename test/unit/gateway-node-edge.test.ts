import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import type { GatewayRequestEvent, OriginEvent } from "../../src/observe/observer.js";
import { createNodeGateway } from "../../src/node/gateway.js";
import { type RunningServer, startServer } from "../../src/node/server.js";
import { MemoryStore } from "../../src/stores/memory.js";
import { type Running, rawExchange, startOrigin } from "./gateway-helpers.js";

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
