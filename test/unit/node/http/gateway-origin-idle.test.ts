import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { originAgents } from "../../../../src/node/http/origin-agents.js";
import { type GatewayUnderTest, type Running, nodeOriginClients, request, startOrigin, waitFor } from "./gateway-helpers.js";

// The gateway closes pooled origin connections that sat unused for the pool's idle timeout
// (sooner when the origin announces a shorter Keep-Alive timeout), and only while they sit
// unused: a slow answer on a reused connection is never cut by it. The origin counts its open
// connections; it keeps idle ones for Node's default 5 s, far longer than these tests wait.
const IDLE_MS = 150;
const SLOW_MS = 400;

describe.each(nodeOriginClients)("idle origin connections, %s", (_label, start) => {
  let origin: Running & { server: http.Server };
  let open = 0;
  const gateways: GatewayUnderTest[] = [];
  beforeAll(async () => {
    origin = await startOrigin((req, res) => {
      const path = req.url ?? "";
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        // An explicit Connection field: Node then adds no Keep-Alive hint of its own.
        if (path.startsWith("/hint-")) res.writeHead(200, { connection: "keep-alive", "keep-alive": `timeout=${path.slice(6)}` });
        if (path === "/slow") setTimeout(() => res.end(`slow ${body}`), SLOW_MS);
        else res.end("ok");
      });
    });
    origin.server.on("connection", (socket) => {
      open++;
      socket.once("close", () => open--);
    });
  });
  afterAll(async () => {
    for (const gateway of gateways) await gateway.close();
    await origin.close();
  });
  const gatewayWith = async (agents = originAgents({ idleTimeoutMs: IDLE_MS })) => {
    const gateway = await start({ origin: origin.url }, agents);
    gateways.push(gateway);
    return gateway;
  };
  /** How long after `send` answered the origin's last connection closed. */
  const closedAfterMs = async (send: () => Promise<unknown>, timeoutMs: number) => {
    await send();
    const answeredMs = performance.now();
    expect(open).toBeGreaterThan(0);
    await waitFor(() => open === 0, timeoutMs);
    return performance.now() - answeredMs;
  };

  it("closes pooled connections after the idle timeout, and opens new ones after", async () => {
    const gateway = await gatewayWith();
    const burst = () => Promise.all([1, 2, 3].map(async () => expect((await request(`${gateway.url}/a`)).status).toBe(200)));
    const closedMs = await closedAfterMs(burst, 2000);
    expect(closedMs).toBeGreaterThanOrEqual(IDLE_MS - 30);
    expect((await request(`${gateway.url}/a`)).status).toBe(200);
  });

  it("closes them a second before the timeout an origin announces, when that comes first", async () => {
    const gateway = await gatewayWith(originAgents());
    const closedMs = await closedAfterMs(async () => expect((await request(`${gateway.url}/hint-2`)).status).toBe(200), 3000);
    expect(closedMs).toBeGreaterThanOrEqual(1000 - 100);
    expect(closedMs).toBeLessThan(2000);
    // An origin announcing 1 s leaves no safe time: its connection is not kept at all.
    const response = await request(`${gateway.url}/hint-1`);
    expect(response.status).toBe(200);
    await waitFor(() => open === 0, 500);
  });

  it("never cuts a slow answer on a reused connection", async () => {
    const gateway = await gatewayWith();
    for (const method of ["GET", "POST"]) {
      expect((await request(`${gateway.url}/a`)).status).toBe(200);
      const response = await request(`${gateway.url}/slow`, { method, body: method === "POST" ? "up" : undefined });
      expect([response.status, response.body.toString()]).toEqual([200, method === "POST" ? "slow up" : "slow "]);
    }
  });
});
