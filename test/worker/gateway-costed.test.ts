import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Policy } from "../../src/core/types.js";
import { deferred, gatewayApp, uniqueUser } from "./gateway-helpers.js";

// A costed answer is always charged, on the Worker: when the client goes away, the gateway
// reads the origin's answer on under ctx.waitUntil, so the debit lands before the request's
// context ends. Each case checks the store right after waitOnExecutionContext, without
// polling: a read that was not kept alive would not have debited yet.
const BUDGET: Policy = { name: "budget", algorithm: "fixed-window", limit: 100_000, periodMs: 3_600_000, burst: 100_000, leaseMs: 30_000, failMode: "closed" };
const gw = gatewayApp({
  origin: "https://origin.test",
  policies: [{ name: "budget", algorithm: "fixed-window", limit: 100_000, period: "1h" }],
  routes: [
    { match: { path: "/llm/*" }, key: "header:x-user", policies: ["budget"], cost: { responseJson: "usage.total_tokens", max: 60_000 } },
    { match: { path: "/slow/*" }, key: "header:x-user", policies: ["budget"], cost: { responseJson: "usage.total_tokens", missing: 7, maxReadMs: 1000 } },
  ],
});
const encoder = new TextEncoder();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const spent = async (user: string) => BUDGET.limit - (await gw.limiter.peek(`header:x-user:${user}`, [BUDGET])).remaining;

async function send(path: string, user: string, ctx: ExecutionContext, signal?: AbortSignal): Promise<Response> {
  return gw.app.fetch(new Request(`https://gateway.test${path}`, { headers: { "x-user": user, "cf-connecting-ip": "10.9.8.7" }, signal }), env, ctx);
}

/** The same route behind a gateway whose platform bounds reading on (createWorker's 25 s for waitUntil's 30, here 500 ms). */
const capped = gatewayApp(
  {
    origin: "https://origin.test",
    policies: [{ name: "budget", algorithm: "fixed-window", limit: 100_000, period: "1h" }],
    routes: [{ match: { path: "/slow/*" }, key: "header:x-user", policies: ["budget"], cost: { responseJson: "usage.total_tokens", missing: 7, maxReadMs: 60_000 } }],
  },
  { readOnCapMs: 500 },
);

describe("Worker gateway: a costed answer is always charged (waitUntil)", () => {
  it("an SSE client that leaves before the usage event is charged the usage", async () => {
    const user = uniqueUser();
    let origin!: ReadableStreamDefaultController<Uint8Array>;
    gw.origin.handler = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            origin = controller;
            controller.enqueue(encoder.encode('data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n'));
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    const ctx = createExecutionContext();
    const answer = await send("/llm/a", user, ctx);
    const reader = answer.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("Hel");
    await reader.cancel("client went away");
    // The origin reports its usage after the client has gone.
    setTimeout(() => {
      origin.enqueue(encoder.encode('data: {"choices":[],"usage":{"total_tokens":5000}}\n\ndata: [DONE]\n\n'));
      origin.close();
    }, 100);
    await waitOnExecutionContext(ctx);
    expect(await spent(user)).toBe(5000);
  });

  it("a client that leaves before the head of a JSON answer is charged the usage it reports", async () => {
    const user = uniqueUser();
    const asked = deferred();
    const answer = deferred<Response>();
    gw.origin.handler = () => {
      asked.resolve();
      return answer.promise;
    };
    const ctx = createExecutionContext();
    const client = new AbortController();
    const replying = send("/llm/a", user, ctx, client.signal).catch(() => undefined);
    await asked.promise;
    client.abort();
    await sleep(50);
    answer.resolve(new Response(JSON.stringify({ usage: { total_tokens: 4321 } }), { headers: { "content-type": "application/json" } }));
    const reply = await replying;
    await reply?.body?.cancel();
    await waitOnExecutionContext(ctx);
    expect(await spent(user)).toBe(4321);
  });

  it("once the client has gone, the answer is read for maxReadMs, then cut and charged no less than `missing`", async () => {
    const user = uniqueUser();
    let timer: ReturnType<typeof setInterval> | undefined;
    gw.origin.handler = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(encoder.encode('data: {"usage":{"total_tokens":3}}\n\n'));
            timer = setInterval(() => controller.enqueue(encoder.encode(": still thinking\n\n")), 50);
          },
          cancel: () => clearInterval(timer),
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    const ctx = createExecutionContext();
    const answer = await send("/slow/a", user, ctx);
    const reader = answer.body!.getReader();
    await reader.read();
    await reader.cancel("client went away");
    await waitOnExecutionContext(ctx);
    clearInterval(timer);
    expect(await spent(user)).toBe(7);
    expect(gw.logs).toContainEqual(expect.objectContaining({ event: "usage-unusable", reason: "the answer was read up to maxReadMs (1000)", cost: 7 }));
  });

  it("reads on no longer than the platform allows (readOnCapMs), whatever the route's maxReadMs", async () => {
    const user = uniqueUser();
    let timer: ReturnType<typeof setInterval> | undefined;
    capped.origin.handler = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(encoder.encode(": hello\n\n"));
            timer = setInterval(() => controller.enqueue(encoder.encode(": still thinking\n\n")), 50);
          },
          cancel: () => clearInterval(timer),
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    const ctx = createExecutionContext();
    const answer = await capped.app.fetch(new Request("https://gateway.test/slow/a", { headers: { "x-user": user, "cf-connecting-ip": "10.9.8.6" } }), env, ctx);
    const reader = answer.body!.getReader();
    await reader.read();
    await reader.cancel("client went away");
    await waitOnExecutionContext(ctx);
    clearInterval(timer);
    expect(BUDGET.limit - (await capped.limiter.peek(`header:x-user:${user}`, [BUDGET])).remaining).toBe(7);
    expect(capped.logs).toContainEqual(expect.objectContaining({ reason: "the answer was read up to maxReadMs (500)", cost: 7 }));
  });
});
