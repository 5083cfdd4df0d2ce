import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type SpillwayConfig, parseConfig } from "../../../../src/config/config.js";
import { createGateway } from "../../../../src/gateway/gateway.js";
import { createNodeGateway, createNodeOriginFetch, nodeClientIp } from "../../../../src/node/http/gateway.js";
import { OriginTimeoutError } from "../../../../src/gateway/origin-timeout.js";
import { ORIGIN_TIMEOUT_TYPE } from "../../../../src/core/wire.js";
import { globalFetchOrigin } from "../../../../src/gateway/proxy.js";
import { startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { type Running, startOrigin, waitFor } from "./gateway-helpers.js";

// An origin that never answers, or stalls mid-body, must not hold the client or its
// concurrency lease: both origin clients (node:http for `spillway serve`, global fetch as on
// Workers) behind the real server, in front of a real loopback origin.
const TIMEOUT_MS = 200;
let origin: Running & { server: http.Server };
const held: http.ServerResponse[] = [];

function startTestOrigin(): Promise<Running & { server: http.Server }> {
  return startOrigin((req, res) => {
    const path = req.url ?? "";
    if (path.includes("hang")) {
      // Reads the request, then never answers.
      req.resume();
      held.push(res);
    } else if (path.includes("stall")) {
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("first chunk, then nothing");
      held.push(res);
    } else if (path.includes("late")) {
      // Headers after two timeouts.
      const timer = setTimeout(() => res.end("late"), TIMEOUT_MS * 2);
      res.on("close", () => clearTimeout(timer));
    } else if (path.includes("drip")) {
      // A slow body whose chunks come within the timeout: never cut.
      res.writeHead(200);
      let left = 5;
      const timer = setInterval(() => {
        res.write(`${left}`);
        if (--left === 0) {
          clearInterval(timer);
          res.end();
        }
      }, TIMEOUT_MS / 2);
    } else {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => res.end(`ok ${body}`));
    }
  });
}

beforeAll(async () => {
  origin = await startTestOrigin();
});
afterAll(async () => {
  for (const res of held) res.destroy();
  await origin.close();
});

type Setup = (config: SpillwayConfig, limiter: MemoryStore) => NonNullable<Parameters<typeof startServer>[0]["fallback"]>;
const setups: [string, Setup][] = [
  // `spillway serve`: plain requests take the node:http edge, which keeps its own clocks.
  ["the node:http gateway edge", (config, limiter) => createNodeGateway({ config, limiter, log: () => {} })!],
  ["the Hono edge, node:http origin client", (config, limiter) => createGateway({ config, limiter, clientIpOf: nodeClientIp, fetchOrigin: createNodeOriginFetch(), log: () => {} })],
  ["the Hono edge, global fetch origin client", (config, limiter) => createGateway({ config, limiter, clientIpOf: nodeClientIp, fetchOrigin: globalFetchOrigin, log: () => {} })],
];

describe.each(setups)("origin timeout, %s", (label, setup) => {
  let url: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const config = parseConfig({
      origin: origin.url,
      originTimeoutMs: TIMEOUT_MS,
      policies: [{ name: "slot", algorithm: "concurrency", limit: 1, lease: "30s" }],
      routes: [
        { match: { path: "/slot/*" }, key: "header:x-user", policies: ["slot"] },
        { match: { path: "/patient/*" }, key: "header:x-user", policies: ["slot"], originTimeoutMs: 5000 },
      ],
    });
    const limiter = new MemoryStore();
    const fallback = setup(config, limiter);
    const server = await startServer({ config, limiter, port: 0, fallback, token: "t", drainTimeoutMs: 100 });
    url = server.url;
    close = () => server.close();
  });
  afterAll(() => close());

  let users = 0;
  const get = (path: string, user: string) => fetch(`${url}${path}`, { headers: { "x-user": user }, signal: AbortSignal.timeout(5000) });

  it("answers 504 problem+json when the origin sends no headers in time, and releases the lease", async () => {
    const user = `hang-${++users}`;
    const startedMs = Date.now();
    const response = await get("/slot/hang", user);
    expect(response.status).toBe(504);
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    const problem = (await response.json()) as { type: string; title: string; detail: string };
    expect(problem).toMatchObject({ type: ORIGIN_TIMEOUT_TYPE, title: "Gateway Timeout", status: 504 });
    expect(problem.detail).toContain(`${TIMEOUT_MS} ms (originTimeoutMs)`);
    // The limit-1 slot is free again: the next request of that user is admitted.
    expect((await get("/slot/ok", user)).status).toBe(200);
  });

  it("times requests no route matches with the config's originTimeoutMs", async () => {
    expect((await get("/unrouted/hang", "anyone")).status).toBe(504);
  });

  it("cuts an answer whose body stalls, and releases the lease", async () => {
    // @hono/node-server logs a body stream's error (any origin failing mid-answer) with console.error.
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const user = `stall-${++users}`;
      const response = await get("/slot/stall", user);
      expect(response.status).toBe(200);
      await expect(response.text()).rejects.toThrow();
      await waitFor(async () => (await get("/slot/ok", user)).status === 200);
      // The Hono edge logs the cut stream's error; the node:http edge just cuts the answer.
      if (label.startsWith("the Hono edge")) expect(logged.mock.calls.some(([error]) => error instanceof OriginTimeoutError || (error as Error)?.message === "aborted")).toBe(true);
    } finally {
      logged.mockRestore();
    }
  });

  it("never cuts a body whose chunks keep coming, however long it takes in all", async () => {
    const response = await get("/slot/drip", `drip-${++users}`);
    expect(await response.text()).toBe("54321");
  });

  it("does not count a slow upload against the origin", async () => {
    // The client pauses longer than the timeout between chunks; the origin answers once it has the body.
    const chunks = ["abc", "def"];
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 1.5));
        const chunk = chunks.shift();
        if (chunk === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(chunk));
      },
    });
    const init = { method: "POST", headers: { "x-user": `upload-${++users}` }, body, duplex: "half" } as RequestInit;
    const response = await fetch(`${url}/slot/upload`, init);
    expect([response.status, await response.text()]).toEqual([200, "ok abcdef"]);
  });

  it("lets a route wait longer than the config's default", async () => {
    expect((await get("/slot/late", `late-${++users}`)).status).toBe(504);
    const response = await get("/patient/late", `patient-${++users}`);
    expect([response.status, await response.text()]).toEqual([200, "late"]);
  });
});
