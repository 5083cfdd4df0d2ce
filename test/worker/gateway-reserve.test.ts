import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { DurableObjectStore } from "../../src/stores/durable-object.js";
import { createWorker } from "../../src/worker/index.js";
import type { Env } from "../../src/worker/env.js";
import { deferred, gatewayApp, uniqueUser, waitFor } from "./gateway-helpers.js";

// Reserve, then settle on the Worker (docs/counting.md): the reservation is the request's one
// decision (a check at cost = estimate in the key's Durable Object), and the settle
// (actual − estimate, a refund when negative) rides with the key's next request, or goes
// alone within DEBIT_CARRY_MS. The origin is a stand-in that holds every answer until the test lets go.
const TOKENS = parsePolicy({ name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" }, "policy");
const cost = { responseJson: "usage.total_tokens", max: 8000 };
const CONFIG = {
  origin: "https://origin.test",
  policies: [{ name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" }],
  routes: [
    { match: { path: "/reserved/*" }, key: "header:x-user", policies: ["tokens"], cost, estimate: 2000 },
    { match: { path: "/counted/*" }, key: "header:x-user", policies: ["tokens"], count: { status: ["2xx"] }, cost, estimate: 2000 },
    { match: { path: "/slow/*" }, key: "header:x-user", policies: ["tokens"], cost: { ...cost, maxReadMs: 1000 }, estimate: 2000 },
    { match: { path: "/peeked/*" }, key: "header:x-user", policies: ["tokens"], cost },
  ],
};
const gw = gatewayApp(CONFIG);
const USAGE = JSON.stringify({ id: "x", choices: [{ message: { content: "hi" } }], usage: { prompt_tokens: 500, completion_tokens: 1000, total_tokens: 1500 } });

type Mode = "usage" | "no-usage" | "error" | "not-found";
const held: { mode: Mode; resolve: (response: Response) => void }[] = [];
const answerOf = (mode: Mode) => {
  if (mode === "no-usage") return new Response('{"id":"x","choices":[]}', { headers: { "content-type": "application/json" } });
  if (mode === "error") return new Response('{"error":{"message":"overloaded"}}', { status: 500, headers: { "content-type": "application/json" } });
  if (mode === "not-found") return new Response('{"error":{"message":"no such model"}}', { status: 404, headers: { "content-type": "application/json" } });
  return new Response(USAGE, { headers: { "content-type": "application/json" } });
};
gw.origin.handler = (request) => {
  const answered = deferred<Response>();
  held.push({ mode: (request.headers.get("x-mode") ?? "usage") as Mode, resolve: answered.resolve });
  // As fetch does: the gateway's abort (its client gone past maxReadMs) fails the origin request.
  const aborted = new Promise<Response>((_resolve, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason), { once: true }));
  return Promise.race([answered.promise, aborted]);
};
const releaseAll = () => held.splice(0).forEach(({ mode, resolve }) => resolve(answerOf(mode)));

const remaining = async (user: string, store = gw.limiter) => (await store.peek(`header:x-user:${user}`, [TOKENS])).remaining;

/** Sends `count` requests at once; answers them once every one has been decided (each under its own waitUntil). */
async function burst(path: string, user: string, count: number, headers: Record<string, string> = {}) {
  const before = gw.origin.hits;
  let refused = 0;
  const contexts = Array.from({ length: count }, () => createExecutionContext());
  const sent = contexts.map((ctx) =>
    Promise.resolve(gw.app.fetch(new Request(`https://gateway.test${path}`, { method: "POST", headers: { "x-user": user, "cf-connecting-ip": "10.4.4.4", ...headers }, body: '{"model":"m","max_tokens":2000}' }), env, ctx)).then(async (answer: Response) => {
      if (answer.status === 429) refused++;
      await answer.text();
      return answer.status;
    }),
  );
  await waitFor(() => gw.origin.hits - before + refused === count);
  const atOrigin = gw.origin.hits - before;
  // Another isolate's view: this store holds no debit of the key.
  const remainingWhileHeld = await remaining(user, new DurableObjectStore(env.LIMITER));
  releaseAll();
  const statuses = await Promise.all(sent);
  await Promise.all(contexts.map((ctx) => waitOnExecutionContext(ctx)));
  return { atOrigin, remainingWhileHeld, statuses };
}

describe("Worker gateway: reserve, then settle", () => {
  it("createWorker takes a route with an `estimate`: a reservation that cannot fit is refused before any origin is asked", async () => {
    const worker = createWorker({ ...CONFIG, policies: [{ name: "tokens", algorithm: "token-bucket", limit: 1000, period: "1m" }], routes: [CONFIG.routes[0]!] });
    const ctx = createExecutionContext();
    const answer = await worker.fetch(new Request("https://gateway.test/reserved/chat", { method: "POST", headers: { "x-user": uniqueUser() }, body: "{}" }), env as unknown as Env, ctx);
    await waitOnExecutionContext(ctx);
    // A reservation of 2,000 never fits 1,000 tokens: 429, the origin (which does not exist) never asked.
    expect(answer.status).toBe(429);
    expect(JSON.parse(await answer.text())).toMatchObject({ "violated-policies": ["tokens"] });
  });

  it("20 at once, an estimate of 2,000 against 10,000 tokens: exactly 5 reach the origin, and the unused 2,500 come back", async () => {
    const user = uniqueUser();
    const { atOrigin, remainingWhileHeld, statuses } = await burst("/reserved/chat", user, 20);
    expect(atOrigin).toBe(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(15);
    expect(remainingWhileHeld).toBe(0);
    // Each answer used 1,500 of its 2,000: the 5 refunds of 500 landed (alone, none took them) by the end of waitUntil.
    expect(await remaining(user, new DurableObjectStore(env.LIMITER))).toBe(2500);
  });

  it("without an estimate nothing changes: all 20 pass the peek and reach the origin", async () => {
    const user = uniqueUser();
    const { atOrigin } = await burst("/peeked/chat", user, 20);
    expect(atOrigin).toBe(20);
    expect(await remaining(user)).toBe(0);
  });

  it("an answer without usage, or an origin error, is charged missing (the cost's max), never only the reservation", async () => {
    for (const mode of ["no-usage", "error"] as const) {
      const user = uniqueUser();
      const { atOrigin, statuses } = await burst("/reserved/chat", user, 1, { "x-mode": mode });
      expect(atOrigin).toBe(1);
      expect(statuses[0]).toBe(mode === "error" ? 500 : 200);
      expect(await remaining(user)).toBe(10_000 - 8000);
    }
  });

  it("an answer whose status is not counted keeps its reservation (nothing settled)", async () => {
    const user = uniqueUser();
    const { statuses } = await burst("/counted/chat", user, 1, { "x-mode": "not-found" });
    expect(statuses[0]).toBe(404);
    expect(await remaining(user)).toBe(8000);
  });

  it("a client that leaves before the answer is charged the answer's usage, not the reservation", async () => {
    const user = uniqueUser();
    const before = gw.origin.hits;
    const client = new AbortController();
    const ctx = createExecutionContext();
    const gone = Promise.resolve(gw.app.fetch(new Request("https://gateway.test/reserved/chat", { method: "POST", headers: { "x-user": user }, body: "{}", signal: client.signal }), env, ctx)).catch(() => undefined);
    await waitFor(() => gw.origin.hits === before + 1);
    client.abort();
    await new Promise((resolve) => setTimeout(resolve, 50));
    releaseAll();
    await (await gone)?.body?.cancel();
    await waitOnExecutionContext(ctx);
    expect(await remaining(user, new DurableObjectStore(env.LIMITER))).toBe(8500);
  });

  it("a client that leaves and an origin that never answers within maxReadMs: charged missing (the cost's max), not the reservation", async () => {
    const user = uniqueUser();
    const before = gw.origin.hits;
    const client = new AbortController();
    const ctx = createExecutionContext();
    const gone = Promise.resolve(gw.app.fetch(new Request("https://gateway.test/slow/chat", { method: "POST", headers: { "x-user": user }, body: "{}", signal: client.signal }), env, ctx)).catch(() => undefined);
    await waitFor(() => gw.origin.hits === before + 1);
    client.abort();
    await gone;
    await waitOnExecutionContext(ctx);
    held.splice(0);
    expect(await remaining(user, new DurableObjectStore(env.LIMITER))).toBe(2000);
  });
});
