import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Policy } from "../../src/core/types.js";
import { deferred, gatewayApp, uniqueUser, waitFor } from "./gateway-helpers.js";

// The request body's fields on the Worker (docs/counting.md, "Fields of the request body"): the
// Hono edge holds the body's prefix while the fields are read (src/gateway/body-hold.ts), the
// reservation is checked in the real Durable Objects, and the origin gets the body unchanged.
const TOKENS: Policy = { name: "tokens", algorithm: "token-bucket", limit: 10_000, periodMs: 60_000, burst: 10_000, leaseMs: 30_000, failMode: "closed" };
const cost = { responseJson: "usage.total_tokens", max: 8000 };
const estimate = { requestJson: ["max_tokens", "max_completion_tokens"], promptTokensPerByte: 0 };
const gw = gatewayApp({
  origin: "https://origin.test",
  policies: [
    { name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" },
    { name: "gpt4o", algorithm: "token-bucket", limit: 10_000, period: "1m" },
  ],
  routes: [
    { match: { path: "/bound/*" }, key: "header:x-user", policies: ["tokens"], cost, estimate },
    { match: { path: "/small/*" }, key: "header:x-user", policies: ["tokens"], cost, estimate, maxRequestReadBytes: 1024 },
    { match: { path: "/by-user/*" }, key: "json:user", policies: ["tokens"] },
    { match: { path: "/models/*" }, key: "header:x-user", policiesBy: { json: "model", policies: { "gpt-4o": ["gpt4o"] }, default: ["tokens"] } },
  ],
});
const usage = JSON.stringify({ usage: { total_tokens: 1500 } });
const remaining = async (key: string, policy = TOKENS) => (await gw.limiter.peek(key, [policy])).remaining;

async function post(path: string, body: BodyInit, headers: Record<string, string>, ctx = createExecutionContext()): Promise<Response> {
  return await gw.app.fetch(new Request(`https://gateway.test${path}`, { method: "POST", headers: { "content-type": "application/json", "cf-connecting-ip": "10.1.2.3", ...headers }, body, duplex: "half" } as RequestInit), env, ctx);
}

describe("Worker gateway: request body fields", () => {
  it("20 requests at once with max_tokens 2,000 against 10,000 tokens: exactly 5 reach the origin", async () => {
    const user = uniqueUser();
    const release = deferred();
    let reached = 0;
    gw.origin.handler = async (request) => {
      reached++;
      await request.text();
      await release.promise;
      return new Response(usage, { headers: { "content-type": "application/json" } });
    };
    const ctxs = Array.from({ length: 20 }, () => createExecutionContext());
    const sent = ctxs.map((ctx) => post("/bound/chat", '{"model":"m","max_tokens":2000}', { "x-user": user }, ctx));
    let refused = 0;
    for (const one of sent) void one.then((answer) => answer.status === 429 && refused++);
    await waitFor(() => reached + refused === 20);
    expect(reached).toBe(5);
    expect(await remaining(`header:x-user:${user}`)).toBe(0);
    release.resolve();
    const answers = await Promise.all(sent);
    expect(answers.filter((answer) => answer.status === 429)).toHaveLength(15);
    await Promise.all(answers.map((answer) => answer.body?.cancel()));
    await Promise.all(ctxs.map((ctx) => waitOnExecutionContext(ctx)));
  });

  it("a streamed body over maxRequestReadBytes reaches the origin byte for byte", async () => {
    const user = uniqueUser();
    let got = "";
    gw.origin.handler = async (request) => {
      got = await request.text();
      return new Response(usage, { headers: { "content-type": "application/json" } });
    };
    const text = JSON.stringify({ max_tokens: 10, messages: [{ content: "é✓x".repeat(20_000) }] });
    const bytes = new TextEncoder().encode(text);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 777) controller.enqueue(bytes.slice(at, at + 777));
        controller.close();
      },
    });
    const ctx = createExecutionContext();
    const answer = await post("/small/chat", stream, { "x-user": user }, ctx);
    expect(answer.status).toBe(200);
    await answer.text();
    expect(got).toBe(text);
    await waitOnExecutionContext(ctx);
  });

  it("json: keys and policiesBy read the body; a field absent or named twice is a 400 naming it", async () => {
    gw.origin.handler = async (request) => new Response(await request.text());
    const user = uniqueUser();
    const ok = await post("/by-user/x", JSON.stringify({ user }), {});
    expect(await ok.text()).toBe(JSON.stringify({ user }));
    expect(await remaining(`json:user:${user}`)).toBe(9999);
    for (const body of ["{}", '{"user":"a","user":"b"}', "not json"]) {
      const refused = await post("/by-user/x", body, {});
      expect(refused.status, body).toBe(400);
      expect(((await refused.json()) as { detail: string }).detail).toContain("the body's JSON field user");
    }
    const GPT4O: Policy = { ...TOKENS, name: "gpt4o" };
    const picked = await post("/models/x", '{"model":"gpt-4o"}', { "x-user": user });
    expect(picked.status).toBe(200);
    await picked.text();
    expect(await remaining(`header:x-user:${user}`, GPT4O)).toBe(9999);
    expect((await post("/models/x", "{}", { "x-user": user })).status).toBe(400);
  });
});
