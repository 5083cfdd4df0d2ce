import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import anthropicJson from "../fixtures/llm/anthropic-messages.json?raw";
import anthropicSse from "../fixtures/llm/anthropic-messages.sse?raw";
import chatJson from "../fixtures/llm/openai-chat.json?raw";
import chatNoUsage from "../fixtures/llm/openai-chat-no-usage.sse?raw";
import chatSse from "../fixtures/llm/openai-chat.sse?raw";
import responsesJson from "../fixtures/llm/openai-responses.json?raw";
import responsesSse from "../fixtures/llm/openai-responses.sse?raw";
import { EXPECTED, type FixtureName } from "../fixtures/llm/expected.js";
import { DEAREST, MAX_TOKENS, POLICIES, POLICY_INPUTS, PRICES, awayFromWindowTurn, microdollars, providerRoutes } from "../fixtures/llm/provider-config.js";
import { deferred, gatewayApp, uniqueUser } from "./gateway-helpers.js";

// Every test reads what its requests spent, rpm's minute window included: none runs across its turn.
beforeEach(() => awayFromWindowTurn());

// The providers' own framings (test/fixtures/llm/README.md) through the Worker gateway, deciding
// in the real Durable Objects: the origin stand-in answers each fixture byte for byte, and each
// policy is charged its own measure. Charges land under waitUntil: each case reads the store
// right after waitOnExecutionContext.
const BODIES: Record<string, string> = {
  "openai-chat.json": chatJson,
  "openai-chat.sse": chatSse,
  "openai-chat-no-usage.sse": chatNoUsage,
  "openai-responses.json": responsesJson,
  "openai-responses.sse": responsesSse,
  "anthropic-messages.json": anthropicJson,
  "anthropic-messages.sse": anthropicSse,
};
const PATH_OF = { openai: "/openai/x", "openai-responses": "/responses/x", anthropic: "/anthropic/x" } as const;
const encoder = new TextEncoder();
const gw = gatewayApp({ origin: "https://origin.test", policies: POLICY_INPUTS, routes: providerRoutes });
const priceOf = (model: string) => Object.entries(PRICES).find(([name]) => model.startsWith(name))![1];

gw.origin.handler = (request) => {
  const name = request.headers.get("x-fixture") ?? "openai-chat.json";
  const mode = request.headers.get("x-mode") ?? "whole";
  const type = name.endsWith(".sse") ? "text/event-stream" : "application/json";
  if (mode === "500") return new Response('{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}', { status: 500, headers: { "content-type": "application/json" } });
  const body = BODIES[name]!;
  if (mode.startsWith("abort:")) {
    // The origin breaks off mid-stream: the bytes up to the marker, then an error.
    const head = body.slice(0, body.indexOf(mode.slice("abort:".length)));
    return new Response(new ReadableStream({ start: (controller) => { controller.enqueue(encoder.encode(head)); setTimeout(() => controller.error(new Error("origin went away")), 10); } }), { headers: { "content-type": type } });
  }
  return new Response(body, { headers: { "content-type": type } });
};

async function spent(user: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const policy of POLICIES) out[policy.name] = policy.limit - (await gw.limiter.peek(`header:x-user:${user}`, [policy])).remaining;
  return out;
}

async function send(path: string, user: string, headers: Record<string, string> = {}, ctx = createExecutionContext(), body = "{}") {
  const answer = await gw.app.fetch(new Request(`https://gateway.test${path}`, { method: "POST", headers: { "x-user": user, "content-type": "application/json", ...headers }, body }), env, ctx);
  const text = await answer.text().catch(() => "(broken)");
  await waitOnExecutionContext(ctx);
  return { answer, text };
}

describe("Worker gateway: the providers' framings, each policy charged its own measure", () => {
  for (const [name, expected] of Object.entries(EXPECTED) as [FixtureName, (typeof EXPECTED)[FixtureName]][]) {
    it(`${name}: input ${expected.input}, output ${expected.output}, total ${expected.total}, 1 request, its model's price`, async () => {
      const user = uniqueUser();
      const { answer, text } = await send(PATH_OF[expected.preset], user, { "x-fixture": name });
      expect(answer.status).toBe(200);
      expect(text).toBe(BODIES[name]);
      expect(await spent(user)).toEqual({ itpm: expected.input, otpm: expected.output, tpm: expected.total, rpm: 1, usd: microdollars(expected.input, expected.output, priceOf(expected.model)) });
    });
  }

  it("a stream without usage: missing (max) tokens in every measure, at its model's price", async () => {
    const user = uniqueUser();
    await send("/openai/x", user, { "x-fixture": "openai-chat-no-usage.sse" });
    expect(await spent(user)).toEqual({ itpm: MAX_TOKENS, otpm: MAX_TOKENS, tpm: MAX_TOKENS, rpm: 1, usd: microdollars(MAX_TOKENS, MAX_TOKENS, PRICES["gpt-4o-mini"]) });
  });

  it("an Anthropic stream broken off after message_start: the input read, the output missing", async () => {
    const user = uniqueUser();
    await send("/anthropic/x", user, { "x-fixture": "anthropic-messages.sse", "x-mode": "abort:event: message_delta" });
    expect(await spent(user)).toEqual({ itpm: 25, otpm: MAX_TOKENS, tpm: MAX_TOKENS, rpm: 1, usd: microdollars(25, MAX_TOKENS, PRICES["claude-3-5-sonnet"]) });
  });

  it("a client that leaves mid-stream is charged the usage read on under waitUntil (Anthropic's output after it left)", async () => {
    const user = uniqueUser();
    const at = anthropicSse.indexOf("event: message_delta");
    let origin!: ReadableStreamDefaultController<Uint8Array>;
    const handler = gw.origin.handler;
    gw.origin.handler = () => new Response(new ReadableStream<Uint8Array>({ start: (controller) => { origin = controller; controller.enqueue(encoder.encode(anthropicSse.slice(0, at))); } }), { headers: { "content-type": "text/event-stream" } });
    try {
      const ctx = createExecutionContext();
      const answer = await gw.app.fetch(new Request("https://gateway.test/anthropic/x", { method: "POST", headers: { "x-user": user }, body: "{}" }), env, ctx);
      const reader = answer.body!.getReader();
      await reader.read();
      await reader.cancel("client went away");
      setTimeout(() => {
        origin.enqueue(encoder.encode(anthropicSse.slice(at)));
        origin.close();
      }, 50);
      await waitOnExecutionContext(ctx);
      expect(await spent(user)).toEqual({ itpm: 25, otpm: 15, tpm: 40, rpm: 1, usd: microdollars(25, 15, PRICES["claude-3-5-sonnet"]) });
    } finally {
      gw.origin.handler = handler;
    }
  });

  it("an origin 500 without usage or model: missing tokens at the dearest prices", async () => {
    const user = uniqueUser();
    const { answer } = await send("/responses/x", user, { "x-mode": "500" });
    expect(answer.status).toBe(500);
    expect(await spent(user)).toEqual({ itpm: MAX_TOKENS, otpm: MAX_TOKENS, tpm: MAX_TOKENS, rpm: 1, usd: microdollars(MAX_TOKENS, MAX_TOKENS, DEAREST) });
  });

  it("a burst of 12 with an estimate of 2,000 input and 500 output: exactly 5 reach the origin, the others' reservations given back", async () => {
    const user = uniqueUser();
    const release = deferred();
    let reached = 0;
    const handler = gw.origin.handler;
    gw.origin.handler = async (request) => {
      reached++;
      await release.promise;
      return handler(request);
    };
    try {
      const ctx = createExecutionContext();
      const sent = Array.from({ length: 12 }, () => gw.app.fetch(new Request("https://gateway.test/reserved/x", { method: "POST", headers: { "x-user": user, "x-fixture": "openai-chat.json" }, body: "{}" }), env, ctx));
      let refused = 0;
      for (const one of sent) void Promise.resolve(one).then((answer) => answer.status === 429 && refused++);
      // Every decision is made before the origin answers any.
      for (let i = 0; i < 300 && reached + refused < 12; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(reached).toBe(5);
      release.resolve();
      const statuses = await Promise.all(sent.map(async (one) => (await one).status));
      expect(statuses.filter((status) => status === 429)).toHaveLength(7);
      await Promise.all(sent.map(async (one) => (await one).text()));
      await waitOnExecutionContext(ctx);
      expect(await spent(user)).toEqual({ itpm: 5 * 19, otpm: 5 * 10, tpm: 5 * 29, rpm: 5, usd: 5 * microdollars(19, 10, PRICES["gpt-4.1"]) });
    } finally {
      gw.origin.handler = handler;
    }
  });

  it("provider headers: openai's on the answer, a 429 with retry-after and retry-after-ms", async () => {
    const user = uniqueUser();
    const { answer } = await send("/openai/x", user, { "x-fixture": "openai-chat.json" });
    expect(answer.headers.get("x-ratelimit-limit-requests")).toBe("100");
    expect(answer.headers.get("x-ratelimit-remaining-requests")).toBe("99");
    expect(answer.headers.get("x-ratelimit-reset-tokens")).toBe("0s");
    await gw.limiter.debit(`header:x-user:${user}`, [POLICIES.find((policy) => policy.name === "rpm")!], 99);
    const refused = await send("/anthropic/x", user, { "x-fixture": "anthropic-messages.json" });
    expect(refused.answer.status).toBe(429);
    const ms = Number(refused.answer.headers.get("retry-after-ms"));
    expect(ms).toBeGreaterThan(0);
    expect(Number(refused.answer.headers.get("retry-after"))).toBe(Math.ceil(ms / 1000));
    expect(refused.answer.headers.get("anthropic-ratelimit-requests-remaining")).toBe("0");
    expect(refused.answer.headers.get("anthropic-ratelimit-requests-reset")).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });
});

describe("Worker gateway: the request's model prices a route that reads its body", () => {
  const bodyOf = (model: string) => JSON.stringify({ model, max_tokens: 500, messages: [] });

  it("reserves at the request's model (2,000 in, 500 out at gpt-4o-mini's prices, not the dearest), settled to the answer's usage", async () => {
    const user = uniqueUser();
    const release = deferred();
    let reached = 0;
    const handler = gw.origin.handler;
    gw.origin.handler = async (request) => {
      reached++;
      await release.promise;
      return handler(request);
    };
    try {
      const ctx = createExecutionContext();
      const sent = gw.app.fetch(new Request("https://gateway.test/by-model/x", { method: "POST", headers: { "x-user": user, "x-fixture": "openai-chat.sse", "content-type": "application/json" }, body: bodyOf("gpt-4o-mini") }), env, ctx);
      for (let i = 0; i < 300 && reached === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await spent(user)).toMatchObject({ itpm: 2000, otpm: 500, usd: microdollars(2000, 500, PRICES["gpt-4o-mini"]) });
      release.resolve();
      const answer = await sent;
      expect(answer.status).toBe(200);
      await answer.text();
      await waitOnExecutionContext(ctx);
      expect(await spent(user)).toEqual({ itpm: 9, otpm: 12, tpm: 21, rpm: 1, usd: microdollars(9, 12, PRICES["gpt-4o-mini"]) });
    } finally {
      gw.origin.handler = handler;
    }
  });

  it("an answer naming no model (an origin 500) is priced by the request's, a dated snapshot's name included", async () => {
    const user = uniqueUser();
    const { answer } = await send("/by-model/x", user, { "x-mode": "500" }, undefined, bodyOf("gpt-4o-mini-2024-07-18"));
    expect(answer.status).toBe(500);
    expect(await spent(user)).toEqual({ itpm: MAX_TOKENS, otpm: MAX_TOKENS, tpm: MAX_TOKENS, rpm: 1, usd: microdollars(MAX_TOKENS, MAX_TOKENS, PRICES["gpt-4o-mini"]) });
  });

  it("the answer's own model wins over the request's: the provider says what ran", async () => {
    const user = uniqueUser();
    await send("/by-model/x", user, { "x-fixture": "openai-chat.json" }, undefined, bodyOf("gpt-4o-mini"));
    expect(await spent(user)).toEqual({ itpm: 19, otpm: 10, tpm: 29, rpm: 1, usd: microdollars(19, 10, PRICES["gpt-4.1"]) });
  });
});
