import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import type { Limiter } from "../../src/limiter.js";

// Keys given to /v1 (and RPC, and rateLimit()) live in a namespace of their own (issue 45,
// "/v1 keys and gateway route keys share one namespace"): three /v1/check calls for the key
// `header:x-api-key:victim` used to spend the gateway customer `victim`'s budget, and one for
// `header:x-api-key:rich-…` created that customer's balance at the plain limit, past his
// override. Run by `spillway serve` on the memory store (test/unit/api-namespace.test.ts), on
// Redis (test/redis/api-namespace.test.ts) and by the Worker (test/worker/api-namespace.test.ts).
// Loads in workerd too.

export const NAMESPACE_CONFIG = {
  policies: [
    { name: "ns-three", algorithm: "fixed-window", limit: 3, period: "1h" },
    { name: "ns-wallet", algorithm: "credits", limit: 4 },
  ],
  routes: [
    { match: { path: "/ns/*" }, key: "header:x-api-key", policies: ["ns-three"] },
    { match: { path: "/ns-wallet/*" }, key: "header:x-api-key", policies: ["ns-wallet"] },
  ],
  overrides: [{ policy: "ns-wallet", source: "header:x-api-key", key: "rich-*", limit: 1_000_000 }],
};

const THREE = parsePolicy(NAMESPACE_CONFIG.policies[0], "policy");

export interface NamespaceDriver {
  /** A /v1 call with the token: its status and JSON body. */
  api(path: string, body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }>;
  /** A request through the gateway with these headers: its status. */
  gateway(path: string, headers: Record<string, string>): Promise<number>;
  /** The store both decide in. */
  limiter: Limiter;
}

/** Registers the cases; `driverOf` is called once the runner's beforeAll has run. */
export function apiNamespaceConformance(runtime: string, driverOf: () => NamespaceDriver): void {
  const unique = (label: string) => `${label}-${crypto.randomUUID()}`;
  const check = async (key: string, policy = "ns-three") => driverOf().api("/v1/check", { key, policy });
  const statusesOf = async (count: number, send: () => Promise<number>) => {
    const statuses: number[] = [];
    for (let i = 0; i < count; i++) statuses.push(await send());
    return statuses;
  };

  describe(`${runtime}: keys given to /v1 never name a gateway route's state`, () => {
    it("spends no route's budget: /v1 keys spelled like the route's store key count on their own", async () => {
      const victim = unique("victim");
      expect(await statusesOf(4, async () => (await check(`header:x-api-key:${victim}`)).status)).toEqual([200, 200, 200, 429]);
      // The real client still has his whole budget.
      expect(await statusesOf(4, () => driverOf().gateway("/ns/a", { "x-api-key": victim }))).toEqual([200, 200, 200, 429]);
    });

    it("creates no route key's balance: a route's key is reached with an explicit source, and its override applies", async () => {
      const rich = unique("rich");
      // A /v1 key of its own: the plain limit (4), nothing of the route key's override.
      expect(await check(`header:x-api-key:${rich}`, "ns-wallet")).toMatchObject({ status: 200, body: { remaining: 3 } });
      expect(await driverOf().gateway("/ns-wallet/a", { "x-api-key": rich })).toBe(200);
      const read = await driverOf().api("/v1/credits", { key: rich, source: "header:x-api-key", policy: "ns-wallet", add: 0 });
      expect(read).toMatchObject({ status: 200, body: { remaining: 999_999 } });
    });

    it("keeps every other spelling apart too: composite, hashed, Envoy's and the escape's own", async () => {
      const id = crypto.randomUUID();
      for (const spelled of [`[header:x-api-key|ip]:${id}|192.0.2.1`, `ip:${id}`, `header:authorization#sha256:${id}`, `rls/${id}`, `cookie:sid:${id}`]) {
        expect((await check(spelled)).status, spelled).toBe(200);
        // Nothing counted under the spelling itself: a route's (or Envoy's) counter is untouched.
        expect((await driverOf().limiter.peek(spelled, [THREE])).remaining, spelled).toBe(3);
      }
      // `v1:<key>` as given is a key of its own, not the escaped form of `<key>`.
      const key = `header:x-api-key:${id}`;
      expect(await statusesOf(3, async () => (await check(key)).status)).toEqual([200, 200, 200]);
      expect(await check(`v1:${key}`)).toMatchObject({ status: 200, body: { remaining: 2 } });
      expect(await check(`v1:v1:${key}`)).toMatchObject({ status: 200, body: { remaining: 2 } });
    });

    it("keeps the store key of every other /v1 key (an upgrade loses none of their counts)", async () => {
      for (const key of [unique("user:42"), unique("tenant|203.0.113.9"), unique("iphone"), unique("v1-key")]) {
        expect((await check(key)).status).toBe(200);
        expect((await driverOf().limiter.peek(key, [THREE])).remaining, key).toBe(2);
      }
    });
  });
}

/** The driver of a `spillway serve` at `url` (token `test-token`, as gateway-helpers.ts starts it). */
export function serveNamespaceDriver(url: string, limiter: Limiter): NamespaceDriver {
  return {
    api: async (path, body) => {
      const response = await fetch(`${url}${path}`, { method: "POST", headers: { authorization: "Bearer test-token", "content-type": "application/json" }, body: JSON.stringify(body) });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    },
    gateway: async (path, headers) => {
      const response = await fetch(`${url}${path}`, { headers });
      await response.text();
      return response.status;
    },
    limiter,
  };
}
