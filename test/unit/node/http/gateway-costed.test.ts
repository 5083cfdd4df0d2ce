import fs from "node:fs";
import http from "node:http";
import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Policy } from "../../../../src/core/types.js";
import { type GatewayUnderTest, type Running, request, startGateway, startOrigin, waitFor } from "./gateway-helpers.js";

// A costed answer is always charged (docs/counting.md), on `spillway serve`'s two edges: the
// node:http edge (`/llm/chat`) and the Hono edge (`/llm/%63hat`, a spelling it rewrites). A
// client that leaves mid-answer or before the head, an answer of any size, a compression bomb.
const BUDGET: Policy = { name: "budget", algorithm: "fixed-window", limit: 1_000_000, periodMs: 3_600_000, burst: 1_000_000, leaseMs: 30_000, failMode: "closed" };
const json = "usage.total_tokens";
const config = {
  policies: [{ name: "budget", algorithm: "fixed-window", limit: 1_000_000, period: "1h" }],
  routes: [
    { match: { path: "/llm/*" }, key: "header:x-user", policies: ["budget"], cost: { responseJson: json, max: 60_000 } },
    { match: { path: "/slow/*" }, key: "header:x-user", policies: ["budget"], cost: { responseJson: json, missing: 7, maxReadMs: 1000 } },
    { match: { path: "/open/*" }, key: "header:x-user", policies: ["budget"], cost: { responseJson: json } },
    { match: { path: "/late/*" }, key: "header:x-user", policies: ["budget"], cost: { responseJson: json, missing: 9, maxReadMs: 1000 } },
    // A route of its own: usage-unusable is logged once per route and minute.
    { match: { path: "/bomb/*" }, key: "header:x-user", policies: ["budget"], cost: { responseJson: json, max: 60_000 } },
  ],
};
const EDGES = [
  ["node:http edge", "chat"],
  ["Hono edge", "%63hat"],
] as const;
const BOMB = fs.readFileSync(new URL("../../fixtures/bomb-2gib-spaces.br", import.meta.url));
const delta = 'data: {"choices":[{"delta":{"content":"Hello"}}]}\n\n';
const usageEvent = (tokens: number) => `data: {"choices":[],"usage":{"prompt_tokens":10,"total_tokens":${tokens}}}\n\ndata: [DONE]\n\n`;
/** A JSON answer of about `bytes`, its usage at the end, where OpenAI puts it. */
const bigJson = (bytes: number, tokens: number) => JSON.stringify({ id: "x", choices: [{ message: { content: "é".repeat(bytes / 2) } }], usage: { total_tokens: tokens } });

let origin: Running;
let gateway: GatewayUnderTest;
/** Answers the origin holds, by x-user, for the test to go on with. */
const held = new Map<string, http.ServerResponse>();
/** The answers of a burst of one key's requests. */
const burstAnswers: http.ServerResponse[] = [];
let originClosed = 0;

beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    const user = String(req.headers["x-user"]);
    res.once("close", () => originClosed++);
    switch (req.headers["x-mode"]) {
      case "sse":
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(delta);
        if (req.headers["x-burst"]) burstAnswers.push(res);
        else held.set(user, res);
        return;
      case "late":
        held.set(user, res);
        return;
      case "big": {
        const body = Buffer.from(bigJson(Number(req.headers["x-bytes"]), Number(req.headers["x-tokens"])));
        const gzip = req.headers["x-encoding"] === "gzip";
        res.writeHead(200, { "content-type": "application/json", ...(gzip ? { "content-encoding": "gzip" } : {}) });
        return void res.end(gzip ? zlib.gzipSync(body) : body);
      }
      case "bomb":
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "br" });
        return void res.end(BOMB);
      case "trickle": {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write('data: {"usage":{"total_tokens":3}}\n\n');
        const timer = setInterval(() => res.write(": still thinking\n\n"), 50);
        res.once("close", () => clearInterval(timer));
        return;
      }
      default:
        res.writeHead(200, { "content-type": "text/event-stream" }).end(`${delta}data: [DONE]\n\n`);
    }
  });
  gateway = await startGateway({ ...config, origin: origin.url });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});

let users = 0;
const newUser = () => `user-${++users}-${Date.now()}`;
const remaining = async (user: string) => (await gateway.limiter.peek(`header:x-user:${user}`, [BUDGET])).remaining;
const spent = async (user: string) => BUDGET.limit - (await remaining(user));

/** A client that reads the head and the first chunk of the body, then goes away. */
function readFirstChunkAndLeave(path: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(`${gateway.url}${path}`, { headers, agent: false }, (incoming) => {
      incoming.once("data", (chunk: Buffer) => {
        outgoing.destroy();
        resolve(chunk.toString());
      });
    });
    outgoing.on("error", () => {});
    outgoing.once("close", () => resolve(""));
    outgoing.end();
    void reject;
  });
}

describe.each(EDGES)("Node gateway (%s): a costed answer is always charged", (_edge, chat) => {
  it("an SSE client that leaves after the content, before the usage event, is charged the usage", async () => {
    const user = newUser();
    expect(await readFirstChunkAndLeave(`/llm/${chat}`, { "x-user": user, "x-mode": "sse" })).toContain("Hello");
    await waitFor(() => held.has(user));
    // The client is gone; the origin goes on, and the gateway reads on.
    await new Promise((resolve) => setTimeout(resolve, 50));
    held.get(user)!.end(usageEvent(5000));
    await waitFor(async () => (await spent(user)) === 5000);
  });

  it("a client that leaves before the head of a JSON answer is charged the usage it reports", async () => {
    const user = newUser();
    const outgoing = http.request(`${gateway.url}/llm/${chat}`, { headers: { "x-user": user, "x-mode": "late" }, agent: false });
    outgoing.on("error", () => {});
    outgoing.end();
    await waitFor(() => held.has(user));
    outgoing.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    held.get(user)!.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ usage: { total_tokens: 4321 } }));
    await waitFor(async () => (await spent(user)) === 4321);
  });

  it("an answer without usage (include_usage left out) costs `max` by default, not 1", async () => {
    const user = newUser();
    await request(`${gateway.url}/llm/${chat}`, { headers: { "x-user": user } });
    await waitFor(async () => (await spent(user)) === 60_000);
    expect(gateway.logs).toContainEqual(expect.objectContaining({ event: "usage-unusable", reason: "the answer has no usage.total_tokens", cost: 60_000 }));
  });

  it("without `max`, an answer without usage costs the key's whole window: it is refused, not charged 1", async () => {
    const user = newUser();
    await request(`${gateway.url}/open/${chat}`, { headers: { "x-user": user } });
    await waitFor(async () => (await remaining(user)) === 0);
    expect((await request(`${gateway.url}/open/${chat}`, { headers: { "x-user": user } })).status).toBe(429);
  });

  it("a 2 MiB JSON answer is charged its usage", async () => {
    const user = newUser();
    const answer = await request(`${gateway.url}/llm/${chat}`, { headers: { "x-user": user, "x-mode": "big", "x-bytes": String(2 * 1024 * 1024), "x-tokens": "50000" } });
    expect(answer.body.length).toBeGreaterThan(2 * 1024 * 1024);
    await waitFor(async () => (await spent(user)) === 50_000);
  });
});

describe("Node gateway (node:http edge): a burst of clients that leave", () => {
  it("20 clients of one key leave mid-answer at once: every answer is charged its usage", async () => {
    const user = newUser();
    const streams: http.ServerResponse[] = [];
    const leaving = Array.from({ length: 20 }, () => readFirstChunkAndLeave("/llm/chat", { "x-user": user, "x-mode": "sse", "x-burst": "1" }));
    await Promise.all(leaving);
    for (const res of burstAnswers.splice(0)) streams.push(res);
    expect(streams).toHaveLength(20);
    for (const res of streams) res.end(usageEvent(100));
    await waitFor(async () => (await spent(user)) === 2000);
  });
});

describe("Node gateway (node:http edge): reading a costed answer is bounded", () => {
  it("a gzip JSON answer of 2 MiB is decoded for its usage, and reaches the client as sent", async () => {
    const user = newUser();
    const answer = await request(`${gateway.url}/llm/chat`, { headers: { "x-user": user, "x-mode": "big", "x-bytes": String(2 * 1024 * 1024), "x-tokens": "777", "x-encoding": "gzip" } });
    expect(answer.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(zlib.gunzipSync(answer.body).toString()).usage.total_tokens).toBe(777);
    await waitFor(async () => (await spent(user)) === 777);
  });

  it("a brotli bomb (3 KB, 2 GiB decoded) is decoded only up to maxReadBytes: bounded CPU, a prompt debit of `max`", async () => {
    const user = newUser();
    const before = process.cpuUsage();
    const answer = await request(`${gateway.url}/bomb/chat`, { headers: { "x-user": user, "x-mode": "bomb" } });
    expect(answer.body).toEqual(BOMB);
    await waitFor(async () => (await spent(user)) === 60_000);
    const cpu = process.cpuUsage(before);
    // Decoding all of it takes seconds of CPU; 8 MiB (the default maxReadBytes) takes tens of ms.
    // Bounded generously (the test process's CPU, on a loaded machine).
    expect((cpu.user + cpu.system) / 1000).toBeLessThan(2000);
    expect(gateway.logs).toContainEqual(expect.objectContaining({ event: "usage-unusable", reason: "the answer was read up to maxReadBytes (8388608)", cost: 60_000 }));
  });

  it("once the client has gone, the origin's answer is read for maxReadMs at most, then cut: never less than `missing`", async () => {
    const user = newUser();
    const closedBefore = originClosed;
    expect(await readFirstChunkAndLeave("/slow/chat", { "x-user": user, "x-mode": "trickle" })).toContain("total_tokens");
    // The usage so far (3) is less than `missing` (7): a stream cut before its end may have had more to report.
    await waitFor(async () => (await spent(user)) === 7, 5000);
    await waitFor(() => originClosed > closedBefore);
  });

  it("an origin that has not answered maxReadMs after the client left is given up on, and charged `missing`", async () => {
    const user = newUser();
    const outgoing = http.request(`${gateway.url}/late/chat`, { headers: { "x-user": user, "x-mode": "late" }, agent: false });
    outgoing.on("error", () => {});
    outgoing.end();
    await waitFor(() => held.has(user));
    const closedBefore = originClosed;
    outgoing.destroy();
    await waitFor(async () => (await spent(user)) === 9, 5000);
    await waitFor(() => originClosed > closedBefore);
    expect(gateway.logs).toContainEqual(expect.objectContaining({ reason: "the origin had not answered 1000 ms after the client left (maxReadMs)", cost: 9 }));
  });
});
