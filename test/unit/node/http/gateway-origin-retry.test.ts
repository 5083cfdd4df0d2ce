import type http from "node:http";
import type { Socket } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { originAgents } from "../../../../src/node/http/origin-agents.js";
import { type GatewayUnderTest, type Running, nodeOriginClients, request, startOrigin } from "./gateway-helpers.js";

// A request that goes out on a pooled connection the origin drops before answering is sent
// again, once, on a new connection, when it is idempotent and has no body to resend; anything
// else answers 502 (or 504) as before. The origin decides by path what to do with a request
// that came on a reused connection, and records whether each came on a reused one.
const TIMEOUT_MS = 300;
let origin: Running & { server: http.Server };
const requestsOn = new WeakMap<Socket, number>();
/** Per path: for each request the origin received, whether it came on a reused connection. */
const seen = new Map<string, boolean[]>();
const held: http.ServerResponse[] = [];
let paths = 0;
/** A path of its own for each request, so that `seen` tells its attempts apart. */
const unique = (prefix: string) => `/${prefix}-${++paths}`;

beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    const socket = req.socket;
    const reused = (requestsOn.get(socket) ?? 0) > 0;
    requestsOn.set(socket, (requestsOn.get(socket) ?? 0) + 1);
    const path = req.url!;
    seen.set(path, [...(seen.get(path) ?? []), reused]);
    if (path.startsWith("/drop-always") || (path.startsWith("/drop-reused") && reused)) return void socket.destroy();
    // The first bytes of an answer's head, then the connection closes.
    if (path.startsWith("/half-head") && reused) return void socket.end("HTTP/1.1 200 OK\r\n");
    if (path.startsWith("/hang") && reused) return void held.push(res);
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => res.end(`${req.method} ${body}`));
  });
});
afterAll(async () => {
  for (const res of held) res.destroy();
  await origin.close();
});

describe.each(nodeOriginClients)("a pooled connection dropped by the origin, %s", (label, start) => {
  let gateway: GatewayUnderTest;
  beforeAll(async () => {
    gateway = await start({ origin: origin.url, originTimeoutMs: TIMEOUT_MS }, originAgents());
  });
  afterAll(() => gateway.close());
  // A request first, so that the next one takes a pooled connection.
  beforeEach(async () => {
    expect((await request(`${gateway.url}/warm`)).status).toBe(200);
  });

  // The Hono edge hands every OPTIONS body on as a stream, empty or not: only its GET and HEAD go again.
  const retried = label.startsWith("the Hono edge") ? ["GET", "HEAD"] : ["GET", "HEAD", "OPTIONS"];
  it.each(retried)("sends a %s again on a new connection, once, and answers 200", async (method) => {
    const path = unique("drop-reused");
    const response = await request(`${gateway.url}${path}`, { method });
    expect(response.status).toBe(200);
    if (method !== "HEAD") expect(response.body.toString()).toBe(`${method} `);
    expect(seen.get(path)).toEqual([true, false]);
  });

  it("answers 502 to a POST with a body: its body cannot be sent again", async () => {
    const path = unique("drop-reused");
    const response = await request(`${gateway.url}${path}`, { method: "POST", body: "hello" });
    expect(response.status).toBe(502);
    expect(seen.get(path)).toEqual([true]);
  });

  it("answers 502 to an OPTIONS with a body", async () => {
    const path = unique("drop-reused");
    const response = await request(`${gateway.url}${path}`, { method: "OPTIONS", body: "hello", headers: { "content-length": 5 } });
    expect(response.status).toBe(502);
    expect(seen.get(path)).toEqual([true]);
  });

  it("never sends a request a third time: a GET dropped on the new connection too answers 502", async () => {
    const path = unique("drop-always");
    const response = await request(`${gateway.url}${path}`);
    expect(response.status).toBe(502);
    expect(seen.get(path)).toEqual([true, false]);
  });

  it("answers 502 when the origin dropped the connection after the first bytes of its answer", async () => {
    const path = unique("half-head");
    const response = await request(`${gateway.url}${path}`);
    expect(response.status).toBe(502);
    expect(seen.get(path)).toEqual([true]);
  });

  it("answers 504 to a GET the origin did not answer in time, without sending it again", async () => {
    const path = unique("hang");
    const response = await request(`${gateway.url}${path}`);
    expect(response.status).toBe(504);
    expect(seen.get(path)).toEqual([true]);
  });
});
