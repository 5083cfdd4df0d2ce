import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { ValidationError } from "../../../../src/core/validation.js";
import { type RunningServer, nodeServerOptions, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

// A slowloris (headers trickled a byte at a time) must be cut near the headers timeout,
// not after Node's 60 s plus its 30 s checking interval.
const HEADERS_TIMEOUT_MS = 300;

/** Trickles `head` one byte per `everyMs` (then keeps sending header bytes); resolves when the server closes. */
function trickle(port: number, everyMs: number): Promise<{ closedAfterMs: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const startedMs = Date.now();
    const socket = net.connect(port, "127.0.0.1");
    const bytes = Buffer.from("GET /healthz HTTP/1.1\r\nHost: spillway\r\nX-Slow: " + "a".repeat(10_000));
    let sent = 0;
    let answer = "";
    const timer = setInterval(() => {
      if (!socket.destroyed) socket.write(bytes.subarray(sent, ++sent));
    }, everyMs);
    socket.setEncoding("latin1");
    socket.on("data", (data: string) => (answer += data));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearInterval(timer);
      resolve({ closedAfterMs: Date.now() - startedMs, answer });
    });
    setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      reject(new Error("the server still holds the slowloris after 5 s"));
    }, 5000);
  });
}

describe("spillway serve's client timeouts", () => {
  let server: RunningServer;
  beforeAll(async () => {
    const config = parseConfig({ policies: [{ name: "p", algorithm: "gcra", limit: 10, period: "1s" }] });
    server = await startServer({ config, limiter: new MemoryStore(), port: 0, token: "t", timeouts: { headersTimeoutMs: HEADERS_TIMEOUT_MS } });
  });
  afterAll(() => server.close());

  it("cuts a client that trickles its headers one byte at a time near headersTimeoutMs, with a 408", async () => {
    const { closedAfterMs, answer } = await trickle(server.port, 100);
    expect(closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 20);
    expect(answer.startsWith("HTTP/1.1 408")).toBe(true);
  });

  it("still serves a client that sends its headers in time", async () => {
    const response = await fetch(`${server.url}/healthz`);
    expect(response.status).toBe(200);
  });
});

describe("nodeServerOptions", () => {
  it("defaults for a gateway, and checks deadlines often enough to cut near them", () => {
    expect(nodeServerOptions()).toEqual({ headersTimeout: 15_000, requestTimeout: 300_000, keepAliveTimeout: 65_000, connectionsCheckingInterval: 1000 });
    expect(nodeServerOptions({ headersTimeoutMs: 200 }).connectionsCheckingInterval).toBe(50);
  });

  it("refuses a headers timeout above the request timeout, naming the field", () => {
    expect(() => nodeServerOptions({ headersTimeoutMs: 20_000, requestTimeoutMs: 10_000 })).toThrow(ValidationError);
    expect(() => nodeServerOptions({ headersTimeoutMs: 20_000, requestTimeoutMs: 10_000 })).toThrow(/^headersTimeoutMs: must not exceed requestTimeoutMs \(10000\), got 20000$/);
    expect(nodeServerOptions({ headersTimeoutMs: 20_000, requestTimeoutMs: 0 }).requestTimeout).toBe(0);
  });
});
