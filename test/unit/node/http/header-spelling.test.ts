import http, { type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type Request } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { rateLimit } from "../../../../src/node/http/middleware.js";
import { type Running, startGateway, startOrigin } from "./gateway-helpers.js";

// Spillway's own fields are spelled one way (RateLimit-Policy, RateLimit, Retry-After, …) on the
// 200 and on the 429 of every Node answer: spillway/node under Express and node:http, the /v1 API
// and the gateway. Read from the wire (rawHeaders), where a client comparing names sees them.

const SPILLWAY_FIELDS = /^(ratelimit|ratelimit-policy|retry-after|x-ratelimit-.*|spillway-.*)$/i;
const policy = { name: "two", limit: 2, period: "1m" };

/** The Spillway fields' names as sent, for two admitted requests and one denied. */
async function namesOf(send: () => Promise<IncomingMessage>): Promise<{ statuses: number[]; names: string[] }> {
  const statuses: number[] = [];
  const names = new Set<string>();
  for (let i = 0; i < 3; i++) {
    const answer = await send();
    answer.resume();
    statuses.push(answer.statusCode!);
    for (let index = 0; index < answer.rawHeaders.length; index += 2) if (SPILLWAY_FIELDS.test(answer.rawHeaders[index]!)) names.add(answer.rawHeaders[index]!);
  }
  return { statuses, names: [...names].sort() };
}

function get(url: string, init: http.RequestOptions = {}, body?: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => http.request(url, init, resolve).on("error", reject).end(body));
}

async function listen(server: http.Server): Promise<Running> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, port: 0, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const EXPECTED = ["RateLimit", "RateLimit-Policy", "Retry-After"];
let running: Running[] = [];

afterAll(async () => {
  await Promise.all(running.map((server) => server.close()));
});

describe("Spillway's fields are spelled alike on every Node answer", () => {
  let origin: Running;
  beforeAll(async () => {
    origin = await startOrigin((_req, res) => res.end("ok"));
    running.push(origin);
  });

  it("spillway/node under Express", async () => {
    const app = express();
    app.use(rateLimit({ store: new MemoryStore(), policies: policy, key: (req: Request) => req.get("x-key") }));
    app.get("/", (_req, res) => void res.send("ok"));
    const server = await listen(http.createServer(app));
    running.push(server);
    expect(await namesOf(() => get(server.url, { headers: { "x-key": "a" } }))).toEqual({ statuses: [200, 200, 429], names: EXPECTED });
  });

  it("spillway/node under node:http", async () => {
    const limit = rateLimit({ store: new MemoryStore(), policies: policy, key: () => "a" });
    const server = await listen(http.createServer((req, res) => void limit(req, res, () => res.end("ok"))));
    running.push(server);
    expect(await namesOf(() => get(server.url))).toEqual({ statuses: [200, 200, 429], names: EXPECTED });
  });

  it("spillway serve: /v1/check and a gateway route", async () => {
    const gateway = await startGateway({ origin: origin.url, policies: [policy], routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["two"] }] });
    running.push({ ...gateway, close: () => gateway.close() });
    const check = () => get(`${gateway.url}/v1/check`, { method: "POST", headers: { authorization: "Bearer test-token", "content-type": "application/json" } }, JSON.stringify({ key: "a", policy: "two" }));
    expect(await namesOf(check)).toEqual({ statuses: [200, 200, 429], names: EXPECTED });
    expect(await namesOf(() => get(`${gateway.url}/api/x`))).toEqual({ statuses: [200, 200, 429], names: EXPECTED });
  });
});
