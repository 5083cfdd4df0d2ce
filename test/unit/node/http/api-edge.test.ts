import { type IncomingHttpHeaders, type RequestListener, type Server, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { MAX_BODY_BYTES } from "../../../../src/http/api.js";
import { createApp } from "../../../../src/http/app.js";
import { NodeApiEdge } from "../../../../src/node/http/api-edge.js";
import { serverListener } from "../../../../src/node/serve/dispatch.js";
import { SpillwayService } from "../../../../src/service/service.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

// The node:http API edge of `spillway serve` against the Hono app it stands in for: the same
// requests, each pair of servers on its own fresh store, must get the same answers.
const config = parseConfig({
  policies: [
    { name: "two", algorithm: "fixed-window", limit: 2, period: "1h" },
    { name: "one-lease", algorithm: "concurrency", limit: 1, lease: "1m" },
  ],
});

interface Sent {
  path?: string;
  headers?: Record<string, string | string[]>;
  /** Sent with Content-Length unless `chunked`. */
  chunks: string[];
  chunked?: boolean;
}

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: unknown;
}

/** What must match: the status, the headers a client reads, the body with its clock-dependent numbers as types. */
function comparable(status: number, headers: IncomingHttpHeaders, text: string): Answer {
  const kept: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (["date", "connection", "keep-alive", "content-length", "transfer-encoding"].includes(name)) continue;
    kept[name] = name === "retry-after" ? "present" : typeof value === "string" ? value.replace(/t=\d+/g, "t=#") : value;
  }
  const clock = new Set(["resetMs", "retryAfterMs", "leaseId", "waitMs"]);
  const body = text === "" ? "" : JSON.parse(text, (key, value: unknown) => (clock.has(key) ? typeof value : value));
  return { status, headers: kept, body };
}

function send(url: string, { path = "/v1/check", headers = {}, chunks, chunked = false }: Sent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const all: Record<string, string | string[]> = { "content-type": "application/json", ...headers };
    if (!chunked) all["content-length"] = String(Buffer.byteLength(chunks.join("")));
    const req = request(`${url}${path}`, { method: "POST", headers: all }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve(comparable(res.statusCode!, res.headers, text)));
    });
    req.on("error", reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

async function listen(listener: RequestListener): Promise<{ server: Server; url: string }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * A pair: the Hono app of `createApp`, and the edge behind serverListener with an app that
 * answers 418 to everything, so that any answer but a 418 is the edge's own.
 */
async function pair(token: string | undefined) {
  const tokenOf = () => token;
  const honoApp = createApp({ service: new SpillwayService(new MemoryStore(), config), tokenOf });
  const teapot = new Hono().all("*", (c) => c.json({ edge: false }, 418));
  const edge = new NodeApiEdge(new SpillwayService(new MemoryStore(), config), tokenOf);
  return [await listen(getRequestListener(honoApp.fetch)), await listen(serverListener(teapot, undefined, "127.0.0.1", edge))];
}

const AUTH = { authorization: "Bearer secret" };
const json = (body: unknown) => [JSON.stringify(body)];

/** In order: each request's answer depends on the ones before it (the same on both servers). */
const TABLE: [string, Sent][] = [
  ["allowed", { headers: AUTH, chunks: json({ key: "a", policy: "two" }) }],
  ["allowed, the last", { headers: AUTH, chunks: json({ key: "a", policy: "two" }) }],
  ["denied", { headers: AUTH, chunks: json({ key: "a", policy: "two" }) }],
  ["chunked", { headers: AUTH, chunks: ['{"key":"b",', '"policy":"two"}'], chunked: true }],
  ["with a byte order mark", { headers: AUTH, chunks: ["\uFEFF" + JSON.stringify({ key: "c", policy: "two" })] }],
  ["with a query", { path: "/v1/check?x=1", headers: AUTH, chunks: json({ key: "d", policy: "two" }) }],
  ["not JSON", { headers: AUTH, chunks: ["{key"] }],
  ["an empty body", { headers: AUTH, chunks: [] }],
  ["an empty chunked body", { headers: AUTH, chunks: [], chunked: true }],
  ["a bad field", { headers: AUTH, chunks: json({ key: 5, policy: "two" }) }],
  ["an unknown policy", { headers: AUTH, chunks: json({ key: "a", policy: "nope" }) }],
  ["no token", { chunks: json({ key: "a", policy: "two" }) }],
  ["a wrong token", { headers: { authorization: "Bearer nope" }, chunks: json({ key: "a", policy: "two" }) }],
  ["two Authorization headers", { headers: { authorization: ["Bearer secret", "Bearer secret"] }, chunks: json({ key: "e", policy: "two" }) }],
  ["a declared body too large", { headers: AUTH, chunks: [JSON.stringify({ key: "a", pad: "x".repeat(MAX_BODY_BYTES) })] }],
  ["a chunked body too large", { headers: AUTH, chunks: ['{"key":"a","pad":"', ...Array.from({ length: 5 }, () => "x".repeat(16 * 1024)), '"}'], chunked: true }],
  ["peek", { path: "/v1/peek", headers: AUTH, chunks: json({ key: "a", policy: "two" }) }],
  ["reset", { path: "/v1/reset", headers: AUTH, chunks: json({ key: "a", policy: "two" }) }],
  ["allowed after the reset", { headers: AUTH, chunks: json({ key: "a", policy: "two" }) }],
  ["acquire", { path: "/v1/acquire", headers: AUTH, chunks: json({ key: "l", policy: "one-lease" }) }],
  ["acquire, denied", { path: "/v1/acquire", headers: AUTH, chunks: json({ key: "l", policy: "one-lease" }) }],
  ["release of an unknown lease", { path: "/v1/release", headers: AUTH, chunks: json({ key: "l", policy: "one-lease", leaseId: "nope" }) }],
  ["extend of an unknown lease", { path: "/v1/extend", headers: AUTH, chunks: json({ key: "l", policy: "one-lease", leaseId: "nope" }) }],
];

describe("the node:http API edge answers as the Hono app does", () => {
  const servers: Server[] = [];
  let hono: string;
  let edge: string;
  beforeAll(async () => {
    const [a, b] = await pair("secret");
    [hono, edge] = [a!.url, b!.url];
    servers.push(a!.server, b!.server);
  });
  afterAll(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

  it("for a table of requests, in order", async () => {
    for (const [name, sent] of TABLE) {
      const [fromHono, fromEdge] = [await send(hono, sent), await send(edge, sent)];
      expect(fromEdge.status, name).not.toBe(418);
      expect(fromEdge, name).toEqual(fromHono);
    }
  });

  it("when no token is configured (503)", async () => {
    const [a, b] = await pair(undefined);
    servers.push(a!.server, b!.server);
    const sent = { headers: AUTH, chunks: json({ key: "a", policy: "two" }) };
    const [fromHono, fromEdge] = [await send(a!.url, sent), await send(b!.url, sent)];
    expect(fromHono.status).toBe(503);
    expect(fromEdge).toEqual(fromHono);
  });

  it("leaves other spellings and methods to the app", async () => {
    for (const path of ["/V1/check", "/v1//check", "/v1/check/", "/v1/top"]) {
      expect((await send(edge, { path, headers: AUTH, chunks: json({ key: "a", policy: "two" }) })).status, path).toBe(418);
    }
  });
});
