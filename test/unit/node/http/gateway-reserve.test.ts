import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../../../src/core/policy.js";
import { type GatewayUnderTest, type Running, request, startGateway, startOrigin, waitFor } from "./gateway-helpers.js";

// Reserve, then settle (docs/counting.md): a route with an `estimate` checks it before the
// origin sees the request, and settles actual − estimate on the answer. A real loopback origin
// answers OpenAI-style JSON with usage.total_tokens; it holds every answer until the test lets go.
const TOKENS = parsePolicy({ name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" }, "policy");
const cost = { responseJson: "usage.total_tokens", max: 8000 };
const config = {
  policies: [
    { name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" },
    { name: "one-at-a-time", algorithm: "concurrency", limit: 1 },
  ],
  routes: [
    { match: { path: "/reserved/*" }, key: "header:x-user", policies: ["tokens"], cost, estimate: 2000 },
    { match: { path: "/header/*" }, key: "header:x-user", policies: ["tokens"], cost, estimate: { requestHeader: "x-max-tokens" } },
    { match: { path: "/leased/*" }, key: "header:x-user", policies: ["tokens", "one-at-a-time"], cost, estimate: 2000 },
    { match: { path: "/peeked/*" }, key: "header:x-user", policies: ["tokens"], cost },
  ],
};

let origin: Running;
let gateway: GatewayUnderTest;
let reached = 0;
/** Answers the origin holds until `releaseAll`. */
const held: Array<{ res: http.ServerResponse; mode: string }> = [];
const answer = ({ res, mode }: { res: http.ServerResponse; mode: string }) => {
  if (mode === "no-usage") return void res.writeHead(200, { "content-type": "application/json" }).end('{"id":"x","choices":[]}');
  if (mode === "error") return void res.writeHead(500, { "content-type": "application/json" }).end('{"error":{"message":"overloaded"}}');
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ id: "x", choices: [{ message: { content: "hi" } }], usage: { prompt_tokens: 500, completion_tokens: 1000, total_tokens: 1500 } }));
};
const releaseAll = () => held.splice(0).forEach(answer);

beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    reached++;
    held.push({ res, mode: String(req.headers["x-mode"] ?? "usage") });
  });
  gateway = await startGateway({ ...config, origin: origin.url });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});

let users = 0;
const newUser = () => `user-${++users}-${Date.now()}`;
const remaining = async (user: string) => (await gateway.limiter.peek(`header:x-user:${user}`, [TOKENS])).remaining;
const post = (path: string, headers: Record<string, string>) => request(`${gateway.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: '{"model":"m","max_tokens":2000}' });

/** Sends `count` requests at once; answers them once every one has been decided. */
async function burst(path: string, user: string, count: number, headers: Record<string, string> = {}) {
  const before = reached;
  const sent = Array.from({ length: count }, () => post(path, { "x-user": user, ...headers }));
  let refused = 0;
  for (const one of sent) void one.then((answered) => answered.status === 429 && refused++);
  await waitFor(() => reached - before + refused === count);
  const atOrigin = reached - before;
  const remainingWhileHeld = await remaining(user);
  releaseAll();
  const statuses = (await Promise.all(sent)).map((answered) => answered.status);
  return { atOrigin, remainingWhileHeld, statuses };
}

describe("Node gateway: reserve, then settle", () => {
  it("20 requests at once, an estimate of 2,000 against 10,000 tokens: exactly 5 reach the origin, and the unused 2,500 come back", async () => {
    const user = newUser();
    const { atOrigin, remainingWhileHeld, statuses } = await burst("/reserved/chat", user, 20);
    expect(atOrigin).toBe(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(15);
    expect(remainingWhileHeld).toBe(0);
    // Each answer used 1,500 of its 2,000: 500 back each.
    await waitFor(async () => (await remaining(user)) === 2500);
    expect(await remaining(user)).toBe(2500);
  });

  it("without an estimate nothing changes: all 20 pass the peek and reach the origin", async () => {
    const user = newUser();
    const { atOrigin } = await burst("/peeked/chat", user, 20);
    expect(atOrigin).toBe(20);
    await waitFor(async () => (await remaining(user)) === 0);
  });

  it("an answer without usage, or an origin error, is charged missing (the cost's max), never only the reservation", async () => {
    for (const mode of ["no-usage", "error"]) {
      const user = newUser();
      const { atOrigin, statuses } = await burst("/reserved/chat", user, 1, { "x-mode": mode });
      expect(atOrigin).toBe(1);
      expect(statuses[0]).toBe(mode === "error" ? 500 : 200);
      await waitFor(async () => (await remaining(user)) === 2000);
      expect(await remaining(user)).toBe(10_000 - 8000);
    }
  });

  it("a request header estimate reserves its value; a request without it is reserved missing (the cost's max)", async () => {
    const user = newUser();
    const header = await burst("/header/chat", user, 1, { "x-max-tokens": "3000" });
    expect(header.remainingWhileHeld).toBe(7000);
    await waitFor(async () => (await remaining(user)) === 8500);
    const other = newUser();
    const absent = await burst("/header/chat", other, 2);
    // 8,000 each: only one fits in 10,000.
    expect(absent.atOrigin).toBe(1);
    expect(absent.remainingWhileHeld).toBe(2000);
    await waitFor(async () => (await remaining(other)) === 8500);
  });

  it("a lease refused after the reservation gives the reservation back (all-or-nothing over the stack)", async () => {
    const user = newUser();
    const { atOrigin, remainingWhileHeld, statuses } = await burst("/leased/chat", user, 3);
    expect(atOrigin).toBe(1);
    expect(statuses.filter((status) => status === 429)).toHaveLength(2);
    expect(remainingWhileHeld).toBe(8000);
    await waitFor(async () => (await remaining(user)) === 8500);
  });

  it("a client that leaves before the answer is charged the answer's usage, not the reservation", async () => {
    const user = newUser();
    const before = reached;
    const controller = new AbortController();
    const gone = fetch(`${gateway.url}/reserved/chat`, { method: "POST", headers: { "x-user": user }, body: "{}", signal: controller.signal }).catch(() => "aborted");
    await waitFor(() => reached === before + 1);
    controller.abort();
    expect(await gone).toBe("aborted");
    await new Promise((resolve) => setTimeout(resolve, 50));
    releaseAll();
    await waitFor(async () => (await remaining(user)) === 8500);
    expect(await remaining(user)).toBe(8500);
  });
});
