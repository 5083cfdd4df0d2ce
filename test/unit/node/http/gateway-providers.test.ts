import { readFileSync } from "node:fs";
import type http from "node:http";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { EXPECTED, type FixtureName } from "../../../fixtures/llm/expected.js";
import { DEAREST, MAX_TOKENS, POLICIES, POLICY_INPUTS, PRICES, awayFromWindowTurn, microdollars, providerRoutes } from "../../../fixtures/llm/provider-config.js";
import { type GatewayUnderTest, type Running, request, startGateway, startOrigin, waitFor } from "./gateway-helpers.js";

// Every test reads what its requests spent, rpm's minute window included: none runs across its turn.
beforeEach(() => awayFromWindowTurn());

// The providers' own framings (test/fixtures/llm/README.md) through the Node gateway: a loopback
// origin answers each fixture byte for byte, and every policy of the route is charged its own
// measure of the answer: input, output, total tokens, one request, microdollars.
const fixture = (name: string) => readFileSync(new URL(`../../../fixtures/llm/${name}`, import.meta.url));
const PATH_OF = { openai: "/openai/x", "openai-responses": "/responses/x", anthropic: "/anthropic/x" } as const;

let origin: Running;
let gateway: GatewayUnderTest;
let reached = 0;
const held: Array<() => void> = [];
let holding = false;

function answer(req: http.IncomingMessage, res: http.ServerResponse) {
  const name = String(req.headers["x-fixture"] ?? "openai-chat.json");
  const mode = String(req.headers["x-mode"] ?? "whole");
  const bytes = fixture(name);
  const type = name.endsWith(".sse") ? "text/event-stream" : "application/json";
  if (mode === "500") return void res.writeHead(500, { "content-type": "application/json" }).end('{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}');
  if (mode.startsWith("abort:")) {
    // The origin breaks off mid-stream: the bytes up to the marker, then the connection is gone.
    res.writeHead(200, { "content-type": type });
    res.write(bytes.subarray(0, bytes.indexOf(mode.slice("abort:".length))), () => setTimeout(() => res.destroy(), 20));
    return;
  }
  if (mode.startsWith("late:")) {
    // The rest, from the marker on, comes after the client has gone.
    const at = bytes.indexOf(mode.slice("late:".length));
    res.writeHead(200, { "content-type": type });
    res.write(bytes.subarray(0, at));
    setTimeout(() => res.end(bytes.subarray(at)), 150);
    return;
  }
  res.writeHead(200, { "content-type": type }).end(bytes);
}

beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    reached++;
    if (holding) held.push(() => answer(req, res));
    else answer(req, res);
  });
  gateway = await startGateway({ origin: origin.url, policies: POLICY_INPUTS, routes: providerRoutes });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});

let users = 0;
const newUser = () => `user-${++users}-${Date.now()}`;
/** What each policy has spent for the user. */
async function spent(user: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const policy of POLICIES) out[policy.name] = policy.limit - (await gateway.limiter.peek(`header:x-user:${user}`, [policy])).remaining;
  return out;
}
const post = (path: string, user: string, headers: Record<string, string> = {}) =>
  request(`${gateway.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-user": user, ...headers }, body: '{"model":"m","max_tokens":500}' });
const priceOf = (model: string) => Object.entries(PRICES).find(([name]) => model.startsWith(name))![1];

describe("Node gateway: the providers' framings, each policy charged its own measure", () => {
  for (const [name, expected] of Object.entries(EXPECTED) as [FixtureName, (typeof EXPECTED)[FixtureName]][]) {
    it(`${name}: input ${expected.input}, output ${expected.output}, total ${expected.total}, 1 request, and its model's price`, async () => {
      const user = newUser();
      const answered = await post(PATH_OF[expected.preset], user, { "x-fixture": name });
      expect(answered.status).toBe(200);
      // Forwarded byte for byte.
      expect(answered.body.equals(fixture(name))).toBe(true);
      const usd = microdollars(expected.input, expected.output, priceOf(expected.model));
      const want = { itpm: expected.input, otpm: expected.output, tpm: expected.total, rpm: 1, usd };
      await waitFor(async () => JSON.stringify(await spent(user)) === JSON.stringify(want));
      expect(await spent(user)).toEqual(want);
    });
  }

  it("a stream without usage (no include_usage) is charged missing (max) tokens in every measure, its model's price on them", async () => {
    const user = newUser();
    expect((await post("/openai/x", user, { "x-fixture": "openai-chat-no-usage.sse" })).status).toBe(200);
    const want = { itpm: MAX_TOKENS, otpm: MAX_TOKENS, tpm: MAX_TOKENS, rpm: 1, usd: microdollars(MAX_TOKENS, MAX_TOKENS, PRICES["gpt-4o-mini"]) };
    await waitFor(async () => JSON.stringify(await spent(user)) === JSON.stringify(want));
    expect(gateway.logs.some((entry) => entry.event === "usage-unusable")).toBe(true);
  });

  it("an Anthropic stream the origin breaks off after message_start: the input read, the output missing", async () => {
    const user = newUser();
    await post("/anthropic/x", user, { "x-fixture": "anthropic-messages.sse", "x-mode": "abort:event: message_delta" }).catch(() => undefined);
    const want = { itpm: 25, otpm: MAX_TOKENS, tpm: MAX_TOKENS, rpm: 1, usd: microdollars(25, MAX_TOKENS, PRICES["claude-3-5-sonnet"]) };
    await waitFor(async () => JSON.stringify(await spent(user)) === JSON.stringify(want));
  });

  it("a client that leaves mid-stream is charged the usage the gateway reads on for (Anthropic's output after it left)", async () => {
    const user = newUser();
    await new Promise<void>((resolve) => {
      const outgoing = httpRequest(`${gateway.url}/anthropic/x`, { method: "POST", headers: { "x-user": user, "x-fixture": "anthropic-messages.sse", "x-mode": "late:event: message_delta" } }, (incoming) => {
        incoming.once("data", () => {
          outgoing.destroy();
          resolve();
        });
      });
      outgoing.on("error", () => resolve());
      outgoing.end("{}");
    });
    const want = { itpm: 25, otpm: 15, tpm: 40, rpm: 1, usd: microdollars(25, 15, PRICES["claude-3-5-sonnet"]) };
    await waitFor(async () => JSON.stringify(await spent(user)) === JSON.stringify(want));
  });

  it("an origin 500 without usage or model: missing tokens, at the dearest prices of the table", async () => {
    const user = newUser();
    expect((await post("/responses/x", user, { "x-mode": "500" })).status).toBe(500);
    const want = { itpm: MAX_TOKENS, otpm: MAX_TOKENS, tpm: MAX_TOKENS, rpm: 1, usd: microdollars(MAX_TOKENS, MAX_TOKENS, DEAREST) };
    await waitFor(async () => JSON.stringify(await spent(user)) === JSON.stringify(want));
  });

  it("a burst of 20 with an estimate of 2,000 input and 500 output: exactly 5 reach the origin (input binds), the others' reservations are given back", async () => {
    const user = newUser();
    holding = true;
    onTestFinished(() => {
      holding = false;
      held.splice(0).forEach((release) => release());
    });
    const before = reached;
    const sent = Array.from({ length: 20 }, () => post("/reserved/x", user, { "x-fixture": "openai-chat.json" }));
    let refused = 0;
    for (const one of sent) void one.then((answered) => answered.status === 429 && refused++);
    await waitFor(() => reached - before + refused === 20);
    expect(reached - before).toBe(5);
    // While held: 5 reservations in every group, the 15 refused ones given back.
    await waitFor(async () => (await spent(user)).otpm === 2500);
    expect(await spent(user)).toMatchObject({ itpm: 10_000, otpm: 2500, tpm: 12_500, rpm: 5, usd: 5 * microdollars(2000, 500, DEAREST) });
    holding = false;
    held.splice(0).forEach((release) => release());
    const statuses = (await Promise.all(sent)).map((answered) => answered.status);
    expect(statuses.filter((status) => status === 429)).toHaveLength(15);
    // Settled: each answer's own usage (19 in, 10 out, gpt-4.1).
    const want = { itpm: 5 * 19, otpm: 5 * 10, tpm: 5 * 29, rpm: 5, usd: 5 * microdollars(19, 10, PRICES["gpt-4.1"]) };
    await waitFor(async () => JSON.stringify(await spent(user)) === JSON.stringify(want));
  });
});

describe("Node gateway: the request's model prices a route that reads its body", () => {
  const postModel = (user: string, model: string, headers: Record<string, string> = {}) =>
    request(`${gateway.url}/by-model/x`, { method: "POST", headers: { "content-type": "application/json", "x-user": user, ...headers }, body: JSON.stringify({ model, max_tokens: 500, messages: [] }) });

  it("reserves at the request's model (2,000 in, 500 out at gpt-4o-mini's prices, not the dearest), settled to the answer's usage", async () => {
    const user = newUser();
    holding = true;
    onTestFinished(() => {
      holding = false;
      held.splice(0).forEach((release) => release());
    });
    const before = reached;
    const sent = postModel(user, "gpt-4o-mini", { "x-fixture": "openai-chat.sse" });
    await waitFor(() => reached > before);
    expect(await spent(user)).toMatchObject({ itpm: 2000, otpm: 500, usd: microdollars(2000, 500, PRICES["gpt-4o-mini"]) });
    holding = false;
    held.splice(0).forEach((release) => release());
    expect((await sent).status).toBe(200);
    const want = { itpm: 9, otpm: 12, tpm: 21, rpm: 1, usd: microdollars(9, 12, PRICES["gpt-4o-mini"]) };
    await waitFor(async () => JSON.stringify(await spent(user)) === JSON.stringify(want));
  });

  it("an answer naming no model (an origin 500) is priced by the request's, a dated snapshot's name included", async () => {
    const user = newUser();
    expect((await postModel(user, "gpt-4o-mini-2024-07-18", { "x-mode": "500" })).status).toBe(500);
    const want = { itpm: MAX_TOKENS, otpm: MAX_TOKENS, tpm: MAX_TOKENS, rpm: 1, usd: microdollars(MAX_TOKENS, MAX_TOKENS, PRICES["gpt-4o-mini"]) };
    await waitFor(async () => JSON.stringify(await spent(user)) === JSON.stringify(want));
  });

  it("the answer's own model wins over the request's: the provider says what ran", async () => {
    const user = newUser();
    expect((await postModel(user, "gpt-4o-mini", { "x-fixture": "openai-chat.json" })).status).toBe(200);
    const want = { itpm: 19, otpm: 10, tpm: 29, rpm: 1, usd: microdollars(19, 10, PRICES["gpt-4.1"]) };
    await waitFor(async () => JSON.stringify(await spent(user)) === JSON.stringify(want));
  });
});

describe("Node gateway: provider headers", () => {
  it("openai: x-ratelimit-*-requests and -tokens from the policies named, resets in Go's duration form", async () => {
    const answered = await post("/openai/x", newUser(), { "x-fixture": "openai-chat.json" });
    expect(answered.headers["x-ratelimit-limit-requests"]).toBe("100");
    expect(answered.headers["x-ratelimit-remaining-requests"]).toBe("99");
    expect(answered.headers["x-ratelimit-reset-requests"]).toMatch(/^(\d+(\.\d+)?s|\d+ms)$/);
    expect(answered.headers["x-ratelimit-limit-tokens"]).toBe("20000");
    // A body cost: the head shows the state before the answer's debit (nothing reserved here).
    expect(answered.headers["x-ratelimit-remaining-tokens"]).toBe("20000");
    expect(answered.headers["x-ratelimit-reset-tokens"]).toBe("0s");
    expect(answered.headers.ratelimit).toContain('"tpm"');
  });

  it("anthropic: requests, tokens, input and output tokens, resets in RFC 3339", async () => {
    const answered = await post("/anthropic/x", newUser(), { "x-fixture": "anthropic-messages.json" });
    for (const family of ["requests", "tokens", "input-tokens", "output-tokens"]) {
      expect(answered.headers[`anthropic-ratelimit-${family}-limit`]).toMatch(/^\d+$/);
      expect(answered.headers[`anthropic-ratelimit-${family}-reset`]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    expect(answered.headers["anthropic-ratelimit-input-tokens-limit"]).toBe("10000");
    expect(answered.headers["anthropic-ratelimit-requests-remaining"]).toBe("99");
  });

  it("a 429 carries retry-after and retry-after-ms (the exact wait), and the provider's fields", async () => {
    const user = newUser();
    // Spend the requests policy: 100 a minute.
    await gateway.limiter.debit(`header:x-user:${user}`, [POLICIES.find((policy) => policy.name === "rpm")!], 100);
    const refused = await post("/openai/x", user, { "x-fixture": "openai-chat.json" });
    expect(refused.status).toBe(429);
    const ms = Number(refused.headers["retry-after-ms"]);
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThanOrEqual(60_000);
    expect(Number(refused.headers["retry-after"])).toBe(Math.ceil(ms / 1000));
    expect(refused.headers["x-ratelimit-remaining-requests"]).toBe("0");
  });

  it("a route without providerHeaders sends neither the provider's fields nor retry-after-ms", async () => {
    const user = newUser();
    await gateway.limiter.debit(`header:x-user:${user}`, [POLICIES.find((policy) => policy.name === "rpm")!], 100);
    const refused = await post("/responses/x", user);
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBeDefined();
    expect(Object.keys(refused.headers).filter((name) => name.startsWith("x-ratelimit-") || name === "retry-after-ms")).toEqual([]);
  });
});
