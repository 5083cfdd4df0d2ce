import http from "node:http";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { rateLimit } from "../../../src/http/middleware.js";
import { serveNotify } from "../../../src/node/serve/notify.js";
import type { Notice } from "../../../src/notify/notifier.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { type Running, startGateway, startOrigin } from "../node/http/gateway-helpers.js";

// Newcomer 1 (issue 45): a counted route peeks before forwarding, so its refusals are a
// peek's denials; each must send `exhausted` as a check's denial does (docs/limits.md).
const policies = [{ name: "monthly", algorithm: "fixed-window", limit: 3, period: "1h", warnAt: 0.5 }];

let hook: Running & { notices: Notice[] };
let origin: Running;
beforeAll(async () => {
  const notices: Notice[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      notices.push(JSON.parse(body) as Notice);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  hook = { url: `http://127.0.0.1:${port}/hook`, port, notices, close: () => new Promise((resolve) => server.close(() => resolve())) };
  // Every answer costs one token, as an LLM's usage says; /fail answers 500.
  origin = await startOrigin((req, res) => {
    if (req.url?.startsWith("/fail")) return void res.writeHead(500).end();
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ usage: { total_tokens: 1 } }));
  });
});
afterAll(async () => {
  await Promise.all([hook.close(), origin.close()]);
});

async function noticesOf(key: string, count: number): Promise<string[]> {
  const deadline = Date.now() + 5000;
  while (hook.notices.filter((notice) => notice.key === key).length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  // A little longer: a second copy would come now.
  await new Promise((resolve) => setTimeout(resolve, 100));
  return hook.notices.filter((notice) => notice.key === key).map((notice) => notice.event).sort();
}

describe("exhausted on a counted gateway route (spillway serve, memory store)", () => {
  const routes = [
    { match: { path: "/plain/*" }, key: "header:x-plain", policies: ["monthly"] },
    { match: { path: "/llm/*" }, key: "header:x-llm", policies: ["monthly"], cost: { responseJson: "usage.total_tokens" } },
    { match: { path: "/fail/*" }, key: "header:x-fail", policies: ["monthly"], count: { status: ["5xx"] } },
  ];

  it.each([
    ["a plain route", "/plain/x", "x-plain", 200],
    ['"cost": { "responseJson" }', "/llm/chat", "x-llm", 200],
    ['"count": { "status" }', "/fail/login", "x-fail", 500],
  ])("%s: 3 answers, then 4 refusals send one warning and one exhausted", async (_name, path, header, status) => {
    const raw = { policies, origin: origin.url, routes, notify: { url: hook.url } };
    const notices = serveNotify(new MemoryStore(), parseConfig(raw), () => {});
    const gateway = await startGateway(raw, notices.limiter);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) {
        const response = await fetch(`${gateway.url}${path}`, { headers: { [header]: "acme" } });
        await response.arrayBuffer();
        statuses.push(response.status);
      }
      expect(statuses).toEqual([status, status, status, 429, 429, 429, 429]);
      expect(await noticesOf(`header:${header}:acme`, 2)).toEqual(["exhausted", "warning"]);
    } finally {
      await gateway.close();
      notices.close();
    }
  });
});

describe("exhausted from rateLimit()'s counted mode", () => {
  it("count: [401]: the refusals after three failed answers send exhausted", async () => {
    const notices = serveNotify(new MemoryStore(), parseConfig({ policies, notify: { url: hook.url } }), () => {});
    const app = new Hono();
    app.use("/api/*", rateLimit({ store: notices.limiter, policies: policies[0]!, key: (c) => c.req.header("x-user"), count: [401], log: () => {} }));
    app.all("/api/*", (c) => c.text("no", 401));
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await app.request("/api/x", { headers: { "x-user": "mw-ann" } })).status);
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
      expect(await noticesOf("mw-ann", 2)).toEqual(["exhausted", "warning"]);
    } finally {
      notices.close();
    }
  });
});
