import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { originAgents } from "../../../../src/node/http/origin-agents.js";
import { type GatewayUnderTest, type Running, nodeOriginClients, request, startOrigin } from "./gateway-helpers.js";

// An origin that closes idle keep-alive connections sooner than the gateway's pool does: each
// request sent as the origin closes the pooled connection it went out on would fail (reset,
// "socket hang up") and answer 502. The gateway sends such a GET again on a new connection.
const KEEP_ALIVE_MS = 100;
const ROUNDS = 20;
const BURST = 6;
let origin: Running & { server: http.Server };

beforeAll(async () => {
  origin = await startOrigin((_req, res) => {
    // An explicit Connection field: Node then sends no `Keep-Alive: timeout=0` hint, which
    // would tell the pool to keep nothing. Many origins send no hint either.
    res.writeHead(200, { connection: "keep-alive", "content-type": "text/plain" });
    res.end("ok");
  });
  origin.server.keepAliveTimeout = KEEP_ALIVE_MS;
  // Node 24 closes a second past keepAliveTimeout by default; this origin closes right at it.
  origin.server.keepAliveTimeoutBuffer = 0;
});
afterAll(() => origin.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(nodeOriginClients)("an origin closing idle connections, %s", (_label, start) => {
  let gateway: GatewayUnderTest;
  // The default pool: it keeps idle connections far longer than this origin does.
  beforeAll(async () => {
    gateway = await start({ origin: origin.url }, originAgents());
  });
  afterAll(() => gateway.close());

  it("answers every request 200, bursts sent as the origin closes included", async () => {
    let answered = 0;
    const failed: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Gaps from just under the origin's keepAliveTimeout to just over it, then a burst of
      // concurrent requests: some take pooled connections the origin is closing right then.
      await sleep(KEEP_ALIVE_MS - 12 + (round % 7) * 4);
      const burst = await Promise.all(Array.from({ length: BURST }, () => request(`${gateway.url}/r${round}`)));
      for (const { status, body } of burst) {
        answered++;
        if (status !== 200) failed.push(`${status} ${body.toString()}`);
      }
    }
    expect(failed).toEqual([]);
    expect(answered).toBe(ROUNDS * BURST);
  });
});
