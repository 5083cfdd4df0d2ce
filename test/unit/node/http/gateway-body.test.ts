import { createHash } from "node:crypto";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../../../src/core/policy.js";
import { originAgents } from "../../../../src/node/http/origin-agents.js";
import { type GatewayUnderTest, type Running, nodeOriginClients, request, startOrigin, waitFor } from "./gateway-helpers.js";

// The request body's fields (docs/counting.md, "Fields of the request body"): an estimate from
// max_tokens and the prompt's bytes, json: keys and policies by model, read from a bounded
// prefix that the gateway holds and then forwards unchanged. A real loopback origin records the
// bytes it got and holds its answers (OpenAI-style JSON usage) until the test lets them go.
const TOKENS = parsePolicy({ name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" }, "policy");
const cost = { responseJson: "usage.total_tokens", max: 8000 };
const estimate = { requestJson: ["max_tokens", "max_completion_tokens"], promptTokensPerByte: 0 };
const config = {
  policies: [
    { name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" },
    { name: "gpt4o", algorithm: "token-bucket", limit: 10_000, period: "1m" },
    { name: "others", algorithm: "token-bucket", limit: 10_000, period: "1m" },
  ],
  routes: [
    { match: { path: "/bound/*" }, key: "header:x-user", policies: ["tokens"], cost, estimate },
    { match: { path: "/prompt/*" }, key: "header:x-user", policies: ["tokens"], cost, estimate: { requestJson: "max_tokens", missing: 6000 } },
    { match: { path: "/small/*" }, key: "header:x-user", policies: ["tokens"], cost, estimate, maxRequestReadBytes: 1024 },
    { match: { path: "/by-user/*" }, key: "json:user", policies: ["tokens"], cost, estimate },
    { match: { path: "/composite/*" }, key: ["header:x-org", "json:metadata.user_id"], policies: ["tokens"] },
    { match: { path: "/fallback/*" }, key: "json:user", fallbackKey: "ip", policies: ["tokens"] },
    { match: { path: "/models/*" }, key: "header:x-user", policiesBy: { json: "model", policies: { "gpt-4o": ["gpt4o"] }, default: ["others"] }, cost, estimate },
  ],
};

let origin: Running;
let reached = 0;
/** What the origin received, by x-id. */
const bodies = new Map<string, { sha: string; bytes: number }>();
const held: http.ServerResponse[] = [];
const usage = JSON.stringify({ id: "x", choices: [{ message: { content: "hi" } }], usage: { prompt_tokens: 500, completion_tokens: 1000, total_tokens: 1500 } });
const releaseAll = () => held.splice(0).forEach((res) => res.writeHead(200, { "content-type": "application/json" }).end(usage));

beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    reached++;
    const hash = createHash("sha256");
    let bytes = 0;
    req.on("data", (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.length;
    });
    req.on("end", () => {
      bodies.set(String(req.headers["x-id"]), { sha: hash.digest("hex"), bytes });
      if (req.headers["x-hold"]) held.push(res);
      else res.writeHead(200, { "content-type": "application/json" }).end(usage);
    });
  });
});
afterAll(() => origin.close());

let users = 0;
const newUser = () => `user-${++users}-${Date.now()}`;
const sha = (body: Buffer | string) => createHash("sha256").update(body).digest("hex");

describe.each(nodeOriginClients)("request body fields, %s", (_name, start) => {
  let gateway: GatewayUnderTest;
  beforeAll(async () => {
    gateway = await start({ ...config, origin: origin.url }, originAgents());
  });
  afterAll(() => gateway.close());

  const remaining = async (key: string, policy = TOKENS) => (await gateway.limiter.peek(key, [policy])).remaining;
  const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    request(`${gateway.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

  /** Sends `count` requests at once, held at the origin until every one is decided. */
  async function burst(path: string, body: string, count: number, headers: Record<string, string>, key: string) {
    const before = reached;
    const sent = Array.from({ length: count }, () => post(path, body, { "x-hold": "1", ...headers }));
    let refused = 0;
    for (const one of sent) void one.then((answered) => answered.status !== 200 && refused++);
    await waitFor(() => reached - before + refused === count);
    const atOrigin = reached - before;
    const remainingWhileHeld = await remaining(key);
    releaseAll();
    const statuses = (await Promise.all(sent)).map((answered) => answered.status);
    return { atOrigin, remainingWhileHeld, statuses };
  }

  it("20 requests at once with max_tokens 2,000 against 10,000 tokens: exactly 5 reach the origin; the unused tokens come back", async () => {
    const user = newUser();
    const { atOrigin, remainingWhileHeld, statuses } = await burst("/bound/chat", '{"model":"m","messages":[],"max_tokens":2000}', 20, { "x-user": user }, `header:x-user:${user}`);
    expect(atOrigin).toBe(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(15);
    expect(remainingWhileHeld).toBe(0);
    await waitFor(async () => (await remaining(`header:x-user:${user}`)) === 2500);
  });

  it("the prompt's bytes count at promptTokensPerByte (default 0.25), rounded up; the second path is read when the first is absent", async () => {
    const user = newUser();
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(3990) }], max_tokens: 1000 });
    const { remainingWhileHeld } = await burst("/prompt/chat", body, 1, { "x-user": user }, `header:x-user:${user}`);
    expect(remainingWhileHeld).toBe(10_000 - 1000 - Math.ceil(Buffer.byteLength(body) / 4));
    const other = newUser();
    const second = await burst("/bound/chat", '{"max_tokens":null,"max_completion_tokens":3000}', 1, { "x-user": other }, `header:x-user:${other}`);
    expect(second.remainingWhileHeld).toBe(7000);
  });

  it.each([
    ["a negative max_tokens", '{"max_tokens":-5}', 6000],
    ["a fractional max_tokens", '{"max_tokens":2.5}', 6000],
    ["a max_tokens that is a string", '{"max_tokens":"2000"}', 6000],
    ["max_tokens named twice", '{"max_tokens":1,"max_tokens":7000}', 6000],
    ["no output bound", '{"model":"m"}', 6000],
    ["a body that is not JSON", "max_tokens=2000", 6000],
    ["a JSON document cut short", '{"max_tokens":2000', 6000],
    ["a huge max_tokens (clamped to the cost's max)", '{"max_tokens":1e300}', 8000],
  ])("%s: reserved by the rule (missing, else clamped to max), and forwarded", async (_what, body, reserved) => {
    const user = newUser();
    const { atOrigin, remainingWhileHeld, statuses } = await burst("/prompt/chat", body, 1, { "x-user": user }, `header:x-user:${user}`);
    expect(atOrigin).toBe(1);
    expect(statuses).toEqual([200]);
    expect(remainingWhileHeld).toBe(10_000 - reserved);
  });

  it("a body over maxRequestReadBytes is reserved missing, and reaches the origin byte for byte", async () => {
    const user = newUser();
    const body = JSON.stringify({ max_tokens: 10, messages: [{ content: "y".repeat(2000) }] });
    const { remainingWhileHeld, statuses } = await burst("/small/chat", body, 1, { "x-user": user, "x-id": `small-${user}` }, `header:x-user:${user}`);
    expect(statuses).toEqual([200]);
    expect(remainingWhileHeld).toBe(2000);
    expect(bodies.get(`small-${user}`)).toEqual({ sha: sha(body), bytes: Buffer.byteLength(body) });
  });

  it("a large chunked body, over the default 1 MiB prefix, arrives byte for byte; one under it too", async () => {
    for (const size of [3 * 1024 * 1024 + 17, 200_000]) {
      const id = `big-${size}-${newUser()}`;
      const body = Buffer.from(JSON.stringify({ max_tokens: 5, messages: [{ content: "é✓".repeat(size / 5) }] }));
      const answered = await new Promise<number>((resolve, reject) => {
        const outgoing = http.request(`${gateway.url}/bound/chat`, { method: "POST", agent: false, headers: { "content-type": "application/json", "x-user": newUser(), "x-id": id, "transfer-encoding": "chunked" } }, (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode!));
        });
        outgoing.on("error", reject);
        // Written in uneven pieces, some split inside a UTF-8 character.
        for (let at = 0; at < body.length; at += 65_537) outgoing.write(body.subarray(at, at + 65_537));
        outgoing.end();
      });
      expect(answered).toBe(200);
      expect(bodies.get(id)).toEqual({ sha: sha(body), bytes: body.length });
    }
  });

  it("json: keys read the body; absent, not a string or number, or named twice: 400 naming the field; a composite joins the parts", async () => {
    const user = newUser();
    const ok = await post("/by-user/chat", JSON.stringify({ user, max_tokens: 100 }));
    expect(ok.status).toBe(200);
    await waitFor(async () => (await remaining(`json:user:${user}`)) === 10_000 - 1500);
    expect((await post("/by-user/chat", JSON.stringify({ user: 42, max_tokens: 1 }))).status).toBe(200);
    for (const body of ['{"max_tokens":1}', '{"user":{"id":1}}', '{"user":""}', "not json", ""]) {
      const refused = await post("/by-user/chat", body);
      expect(refused.status, body).toBe(400);
      expect(JSON.parse(refused.body.toString()).detail).toContain("the body's JSON field user");
    }
    const notJson = await post("/by-user/chat", "user=a");
    expect(JSON.parse(notJson.body.toString()).detail).toBe("this route is limited by the body's JSON field user; the request does not carry the body's JSON field user (the body is not JSON)");
    const get = await request(`${gateway.url}/by-user/chat`);
    expect(JSON.parse(get.body.toString()).detail).toContain("(the request has no body)");
    const gzipped = await post("/by-user/chat", JSON.stringify({ user }), { "content-encoding": "gzip" });
    expect(JSON.parse(gzipped.body.toString()).detail).toContain("(the body is encoded (gzip))");
    const twice = await post("/by-user/chat", '{"user":"a","user":"b"}');
    expect(twice.status).toBe(400);
    expect(JSON.parse(twice.body.toString()).detail).toContain("more than once");
    const composite = await post("/composite/x", JSON.stringify({ metadata: { user_id: "u|1" } }), { "x-org": "acme" });
    expect(composite.status).toBe(200);
    expect(await remaining("[header:x-org|json:metadata.user_id]:acme|u\\|1")).toBe(9999);
    expect((await post("/composite/x", '{"metadata":{}}', { "x-org": "acme" })).status).toBe(400);
  });

  it("a json: key absent from the body takes the route's fallbackKey", async () => {
    expect((await post("/fallback/x", "{}")).status).toBe(200);
    expect(await remaining("ip:127.0.0.1")).toBeLessThan(10_000);
  });

  it("policiesBy picks the stack by model: listed, unlisted (default), absent (400)", async () => {
    const user = newUser();
    const key = `header:x-user:${user}`;
    const GPT4O = parsePolicy(config.policies[1]!, "p");
    const OTHERS = parsePolicy(config.policies[2]!, "p");
    const gpt = await burst("/models/chat", '{"model":"gpt-4o","max_tokens":3000}', 1, { "x-user": user }, key);
    expect(gpt.statuses).toEqual([200]);
    expect(await remaining(key, GPT4O)).toBe(10_000 - 1500);
    expect(await remaining(key, OTHERS)).toBe(10_000);
    expect((await post("/models/chat", '{"model":"o3-mini","max_tokens":3000}', { "x-user": user })).status).toBe(200);
    await waitFor(async () => (await remaining(key, OTHERS)) === 10_000 - 1500);
    expect(await remaining(key, GPT4O)).toBe(10_000 - 1500);
    for (const body of ['{"max_tokens":1}', '{"model":"gpt-4o","model":"cheap"}', '{"model":7}']) {
      const refused = await post("/models/chat", body, { "x-user": user });
      expect(refused.status, body).toBe(400);
      expect(JSON.parse(refused.body.toString()).detail).toContain("the body's JSON field model");
    }
  });

  it("a refused request's body is dropped and its connection serves the next request", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const send = (body: string) =>
      new Promise<number>((resolve, reject) => {
        const outgoing = http.request(`${gateway.url}/by-user/chat`, { method: "POST", agent, headers: { "content-type": "application/json" } }, (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode!));
        });
        outgoing.on("error", reject);
        outgoing.end(body);
      });
    expect(await send(JSON.stringify({ messages: "z".repeat(1_200_000) }))).toBe(400);
    expect(await send(JSON.stringify({ user: newUser() }))).toBe(200);
    agent.destroy();
  });
});
