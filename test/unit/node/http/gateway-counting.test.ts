import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Policy } from "../../../../src/core/types.js";
import { type GatewayUnderTest, type Running, request, startGateway, startOrigin, waitFor } from "./gateway-helpers.js";

// Node-only cases of counting what the origin answers: node:http hands the gateway the origin's
// bytes as encoded, so the usage reader decodes a copy while the client gets them untouched.
const BUDGET: Policy = { name: "budget", algorithm: "fixed-window", limit: 1000, periodMs: 3_600_000, burst: 1000, leaseMs: 30_000, failMode: "closed" };
const config = {
  policies: [{ name: "budget", algorithm: "fixed-window", limit: 1000, period: "1h" }],
  routes: [{ match: { path: "/*" }, key: "header:x-user", policies: ["budget"], cost: { responseJson: "usage.total_tokens", missing: 7 } }],
};
const usage = (tokens: unknown) => Buffer.from(JSON.stringify({ id: "x", usage: { total_tokens: tokens } }));
const zstd = (zlib as { zstdCompressSync?: (body: Buffer) => Buffer }).zstdCompressSync;
// zstd from Node 22.15 on (the tests run on Node 24).
const ENCODERS: Record<string, (body: Buffer) => Buffer> = { gzip: zlib.gzipSync, deflate: zlib.deflateSync, br: zlib.brotliCompressSync, ...(zstd ? { zstd } : {}) };

let origin: Running;
let gateway: GatewayUnderTest;
beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    const encoding = String(req.headers["x-encoding"] ?? "");
    const body = usage(Number(req.headers["x-tokens"]));
    if (encoding === "compress") return res.writeHead(200, { "content-type": "application/json", "content-encoding": "compress" }).end(body);
    if (!encoding) return res.writeHead(200, { "content-type": "application/json" }).end(body);
    res.writeHead(200, { "content-type": "application/json", "content-encoding": encoding }).end(ENCODERS[encoding]!(body));
  });
  gateway = await startGateway({ ...config, origin: origin.url });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});

const remaining = async (user: string) => (await gateway.limiter.peek(`header:x-user:${user}`, [BUDGET])).remaining;

describe("Node gateway: usage in encoded answers", () => {
  it.each(Object.keys(ENCODERS))("reads usage from a %s answer, which reaches the client as the origin encoded it", async (encoding) => {
    const user = `user-${encoding}`;
    const answer = await request(`${gateway.url}/llm/chat`, { headers: { "x-user": user, "x-encoding": encoding, "x-tokens": "123" } });
    expect(answer.headers["content-encoding"]).toBe(encoding);
    expect(answer.body).toEqual(ENCODERS[encoding]!(usage(123)));
    await waitFor(async () => (await remaining(user)) === 1000 - 123);
  });

  it("an encoding it cannot decode costs `missing`, logged", async () => {
    await request(`${gateway.url}/llm/chat`, { headers: { "x-user": "user-compress", "x-encoding": "compress", "x-tokens": "50" } });
    await waitFor(async () => (await remaining("user-compress")) === 1000 - 7);
    expect(gateway.logs).toContainEqual(expect.objectContaining({ event: "usage-unusable", reason: "the answer is encoded (compress)", cost: 7 }));
  });

  it("the Hono edge (request spellings node:http does not take) reads plain answers, and counts an encoded one as `missing`", async () => {
    // A percent-encoded target: @hono/node-server rewrites it, so the Hono edge serves it.
    await request(`${gateway.url}/llm/%63hat`, { headers: { "x-user": "user-hono", "x-tokens": "40" } });
    await waitFor(async () => (await remaining("user-hono")) === 1000 - 40);
    await request(`${gateway.url}/llm/%63hat`, { headers: { "x-user": "user-hono", "x-encoding": "gzip", "x-tokens": "40" } });
    await waitFor(async () => (await remaining("user-hono")) === 1000 - 47);
  });
});
