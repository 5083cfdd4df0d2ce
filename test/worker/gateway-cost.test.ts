import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import { createGateway } from "../../src/gateway/gateway.js";
import { createApp } from "../../src/http/app.js";
import { SpillwayService } from "../../src/service/service.js";
import { DurableObjectStore, type KeyLimiterNamespace } from "../../src/stores/durable-object.js";
import { cloudflareClientIp } from "../../src/worker/client-ip.js";
import { uniqueUser } from "./gateway-helpers.js";

// Object requests per gateway request on a counted route, counted by the metered LimiterObject
// (scripts/bench/storage-probe.ts): every counted answer's debit (a cost from the body, from a
// header, a counted status, a reservation's settle) rides with the key's next request, so a
// client that sends one request after another costs one object request per request.
const config = parseConfig({
  origin: "https://origin.test",
  policies: [{ name: "tokens", algorithm: "fixed-window", limit: 100000, period: "1h" }],
  routes: [
    { match: { path: "/json/*" }, key: "header:x-api-key", policies: ["tokens"], cost: { responseJson: "usage.total_tokens" } },
    { match: { path: "/header/*" }, key: "header:x-api-key", policies: ["tokens"], cost: { responseHeader: "x-usage-tokens" } },
    { match: { path: "/status/*" }, key: "header:x-api-key", policies: ["tokens"], count: { status: ["2xx"] } },
    { match: { path: "/reserve/*" }, key: "header:x-api-key", policies: ["tokens"], cost: { responseJson: "usage.total_tokens", max: 1000 }, estimate: 100 },
    { match: { path: "/reserve-header/*" }, key: "header:x-api-key", policies: ["tokens"], cost: { responseHeader: "x-usage-tokens", max: 1000 }, estimate: 100 },
  ],
});
const TOKENS = { policy: config.catalog.get("tokens")! };

function gateway(carryMs = 60_000) {
  // A long carry window by default: no debit goes alone however slow the machine (the last rides with the test's peek).
  const store = new DurableObjectStore(env.METERED_LIMITER as unknown as KeyLimiterNamespace, undefined, undefined, carryMs);
  const fallback = createGateway({
    config,
    limiter: store,
    clientIpOf: cloudflareClientIp,
    log: () => {},
    fetchOrigin: async () => new Response(JSON.stringify({ usage: { total_tokens: 30 } }), { headers: { "content-type": "application/json", "x-usage-tokens": "30" } }),
  });
  const app = createApp({ service: new SpillwayService(store, config), tokenOf: () => "test-token", fallback });
  const send = async (path: string, apiKey: string, ctx?: ExecutionContext) => {
    const response = await app.fetch(new Request(`https://gateway.test${path}`, { headers: { "x-api-key": apiKey, "cf-connecting-ip": "10.1.2.3" } }), env, ctx);
    await response.text();
    return response;
  };
  return { store, send };
}

const calls = async (apiKey: string) => (await env.METERED_LIMITER.getByName(`header:x-api-key:${apiKey}`).meter()).calls;
const remainingIn = (field: string | null) => Number(/"tokens";r=(\d+)/.exec(field ?? "")?.[1]);

describe("object requests per gateway request", () => {
  for (const [label, path, each] of [
    ["a cost read from the body", "/json/a", 30],
    ["a cost read from a header", "/header/a", 30],
    ["a counted status (every answer counted)", "/status/a", 1],
    ["a reservation settled from the body (estimate 100, usage 30)", "/reserve/a", 30],
    ["a reservation settled from a header (estimate 100, usage 30)", "/reserve-header/a", 30],
  ] as const) {
    it(`${label}: one per request (each debit rides with the next request), and every unit counted`, async () => {
      const { store, send } = gateway();
      const apiKey = uniqueUser();
      const shown: number[] = [];
      for (let i = 0; i < 10; i++) {
        const answer = await send(path, apiKey);
        expect(answer.status).toBe(200);
        shown.push(remainingIn(answer.headers.get("ratelimit")));
      }
      expect(await calls(apiKey)).toBe(10);
      // Each answer shows the state before its own debit, after every earlier one's.
      const reserved = path.startsWith("/reserve") ? 100 : 0;
      expect(shown).toEqual(Array.from({ length: 10 }, (_, i) => 100000 - i * each - reserved));
      // The last debit rides with the next call: here, a peek, which sees every request's cost.
      expect((await store.peek(`header:x-api-key:${apiKey}`, [TOKENS.policy])).remaining).toBe(100000 - 10 * each);
      expect(await calls(apiKey)).toBe(11);
    });
  }

  it("a debit known at the head with no next request goes alone after carryMs, kept alive by waitUntil: another isolate sees it", async () => {
    for (const path of ["/header/a", "/status/a"]) {
      const { send } = gateway(50);
      const apiKey = uniqueUser();
      const ctx = createExecutionContext();
      expect((await send(path, apiKey, ctx)).status).toBe(200);
      await waitOnExecutionContext(ctx);
      const elsewhere = new DurableObjectStore(env.METERED_LIMITER as unknown as KeyLimiterNamespace);
      expect((await elsewhere.peek(`header:x-api-key:${apiKey}`, [TOKENS.policy])).remaining).toBe(100000 - (path === "/header/a" ? 30 : 1));
      // The peek, the debit alone, the other isolate's peek.
      expect(await calls(apiKey)).toBe(3);
    }
  });
});
