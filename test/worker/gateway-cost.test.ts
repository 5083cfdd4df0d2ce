import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import { createGateway } from "../../src/gateway/gateway.js";
import { createApp } from "../../src/http/app.js";
import { SpillwayService } from "../../src/service/service.js";
import { DurableObjectStore, type KeyLimiterNamespace } from "../../src/stores/durable-object.js";
import { cloudflareClientIp } from "../../src/worker/client-ip.js";
import { uniqueUser } from "./gateway-helpers.js";

// Object requests per gateway request on a costed route, counted by the metered LimiterObject
// (scripts/bench/storage-probe.ts): a cost from the body rides with the key's next peek; a cost
// from a header is debited before the head goes out (a second request per counted answer).
const config = parseConfig({
  origin: "https://origin.test",
  policies: [{ name: "tokens", algorithm: "fixed-window", limit: 100000, period: "1h" }],
  routes: [
    { match: { path: "/json/*" }, key: "header:x-api-key", policies: ["tokens"], cost: { responseJson: "usage.total_tokens" } },
    { match: { path: "/header/*" }, key: "header:x-api-key", policies: ["tokens"], cost: { responseHeader: "x-usage-tokens" } },
  ],
});
const TOKENS = { policy: config.catalog.get("tokens")! };

function gateway() {
  // A long carry window: no debit goes alone however slow the machine (the last rides with the test's peek).
  const store = new DurableObjectStore(env.METERED_LIMITER as unknown as KeyLimiterNamespace, undefined, undefined, 60_000);
  const fallback = createGateway({
    config,
    limiter: store,
    clientIpOf: cloudflareClientIp,
    log: () => {},
    fetchOrigin: async () => new Response(JSON.stringify({ usage: { total_tokens: 30 } }), { headers: { "content-type": "application/json", "x-usage-tokens": "30" } }),
  });
  const app = createApp({ service: new SpillwayService(store, config), tokenOf: () => "test-token", fallback });
  const send = async (path: string, apiKey: string) => {
    const response = await app.fetch(new Request(`https://gateway.test${path}`, { headers: { "x-api-key": apiKey, "cf-connecting-ip": "10.1.2.3" } }), env);
    await response.text();
    return response;
  };
  return { store, send };
}

const calls = async (apiKey: string) => (await env.METERED_LIMITER.getByName(`header:x-api-key:${apiKey}`).meter()).calls;

describe("object requests per gateway request", () => {
  it("a cost read from the body: one per request (each debit rides with the next request's peek), and every token counted", async () => {
    const { store, send } = gateway();
    const apiKey = uniqueUser();
    for (let i = 0; i < 10; i++) expect((await send("/json/a", apiKey)).status).toBe(200);
    expect(await calls(apiKey)).toBe(10);
    // The last debit rides with the next call: here, a peek, which sees every request's 30 tokens.
    expect((await store.peek(`header:x-api-key:${apiKey}`, [TOKENS.policy])).remaining).toBe(100000 - 300);
    expect(await calls(apiKey)).toBe(11);
  });

  it("a cost read from a header: two per request (peek, then the debit before the head)", async () => {
    const { send } = gateway();
    const apiKey = uniqueUser();
    for (let i = 0; i < 10; i++) expect((await send("/header/a", apiKey)).status).toBe(200);
    expect(await calls(apiKey)).toBe(20);
  });
});
