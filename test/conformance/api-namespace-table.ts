import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import type { Limiter } from "../../src/core/limiter.js";

// Keys given to /v1 (and RPC, and rateLimit()) live in a namespace of their own (issue 45,
// "/v1 keys and gateway route keys share one namespace"): three /v1/check calls for the key
// `header:x-api-key:victim` used to spend the gateway customer `victim`'s budget, and one for
// `header:x-api-key:rich-…` created that customer's balance at the plain limit, past his
// override. Run by `spillway serve` on the memory store (test/unit/node/http/api-namespace.test.ts), on
// Redis (test/redis/api-namespace.test.ts) and by the Worker (test/worker/api-namespace.test.ts).
// Loads in workerd too.

export const NAMESPACE_CONFIG = {
  policies: [
    { name: "ns-three", algorithm: "fixed-window", limit: 3, period: "1h" },
    { name: "ns-wallet", algorithm: "credits", limit: 4 },
    { name: "ns-api-wallet", algorithm: "credits", limit: 4 },
  ],
  routes: [
    { match: { path: "/ns/*" }, key: "header:x-api-key", policies: ["ns-three"] },
    { match: { path: "/ns-wallet/*" }, key: "header:x-api-key", policies: ["ns-wallet"] },
    { match: { path: "/ns-combo/*" }, key: ["header:x-user", "ip/56"], policies: ["ns-three"] },
  ],
  overrides: [{ policy: "ns-wallet", source: "header:x-api-key", key: "rich-*", limit: 1_000_000 }],
};

const THREE = parsePolicy(NAMESPACE_CONFIG.policies[0], "policy");

export interface NamespaceDriver {
  /** A /v1 call with the token (POST unless `method` says): its status and JSON body. */
  api(path: string, body: Record<string, unknown>, method?: string): Promise<{ status: number; body: Record<string, unknown> }>;
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

    it("under a burst of 20 at once, an escaped key admits exactly its limit, and the route's key none the less", async () => {
      const victim = unique("burst");
      const answers = await Promise.all(Array.from({ length: 20 }, () => check(`header:x-api-key:${victim}`)));
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(3);
      expect(answers.filter((answer) => answer.status === 429)).toHaveLength(17);
      expect((await driverOf().limiter.peek(`header:x-api-key:${victim}`, [THREE])).remaining).toBe(3);
    });

    it("keeps the store key of every other /v1 key (an upgrade loses none of their counts)", async () => {
      for (const key of [unique("user:42"), unique("tenant|203.0.113.9"), unique("iphone"), unique("v1-key")]) {
        expect((await check(key)).status).toBe(200);
        expect((await driverOf().limiter.peek(key, [THREE])).remaining, key).toBe(2);
      }
    });
  });
}

/**
 * `/v1/credits` and `/v1/overrides` against what the config's routes read (issue 45, Low 11 and
 * the newcomer's "keys no route can read are accepted in silence"): a `source` no route of the
 * policy reads is a 400 naming `source`, a key of the wrong number of parts one naming `key`;
 * a key that may match but likely is not what was meant answers 200 with a `warning`.
 * Store-independent: run by `spillway serve` and the Worker. `driverOf` needs only `api`.
 */
export function keySourcesConformance(runtime: string, driverOf: () => Pick<NamespaceDriver, "api">): void {
  const credits = (body: Record<string, unknown>) => driverOf().api("/v1/credits", { policy: "ns-wallet", add: 0, ...body });
  const putOverride = (body: Record<string, unknown>) => driverOf().api("/v1/overrides", { policy: "ns-three", limit: 10, ...body }, "PUT");
  const refusal = (field: string, detail: RegExp) => ({ status: 400, body: { field, detail: expect.stringMatching(detail) } });

  describe(`${runtime}: a source must be one the policy's routes read`, () => {
    it("/v1/credits refuses a source no route of the policy reads, as allow and deny do, naming source", async () => {
      const key = crypto.randomUUID();
      expect(await credits({ key, source: [] })).toMatchObject(refusal("source", /^source: must name at least one key source, got \[\]/));
      expect(await credits({ key, source: "cf:country" })).toMatchObject(refusal("source", /no route that counts "ns-wallet" reads keys from "cf:country".*"header:x-api-key"/));
      expect(await credits({ key, source: `header:${"x".repeat(5000)}` })).toMatchObject(refusal("source", /no route that counts "ns-wallet" reads keys from "header:xxx/));
      // A source other routes read, but not this policy's.
      expect(await credits({ key, source: ["header:x-user", "ip/56"] })).toMatchObject(refusal("source", /no route that counts "ns-wallet"/));
      expect(await credits({ key, source: "header:X-Api-Key" })).toMatchObject({ status: 200, body: { remaining: 4 } });
      expect((await credits({ key, source: "header:x-api-key" })).body.warning).toBeUndefined();
    });

    it("/v1/credits without a source, for a policy only routes count: 200 with a warning that says which source to name", async () => {
      const answer = await credits({ key: crypto.randomUUID() });
      expect(answer).toMatchObject({ status: 200, body: { remaining: 4, warning: expect.stringMatching(/^no source given: .*which no gateway route reads; the routes that count "ns-wallet" read keys from "header:x-api-key"/) } });
      // A policy no route counts is the API's own: nothing to warn of.
      const own = await credits({ key: crypto.randomUUID(), policy: "ns-api-wallet" });
      expect(own).toMatchObject({ status: 200, body: { remaining: 4 } });
      expect(own.body.warning).toBeUndefined();
    });

    it("PUT /v1/overrides refuses a source no route of the policy reads, and a composite key of the wrong number of parts", async () => {
      const key = crypto.randomUUID();
      expect(await putOverride({ key, source: "header:x-user" })).toMatchObject(refusal("source", /no route that counts "ns-three" reads keys from "header:x-user", so no route would apply it \(the routes' key sources for "ns-three": "header:x-api-key", \["header:x-user","ip"\]\)/));
      expect(await putOverride({ key, source: ["header:x-user", "ip/56"] })).toMatchObject(refusal("key", /must be 2 parts joined by "\|"/));
      const sourced = await putOverride({ key, source: "header:x-api-key" });
      expect(sourced.status).toBe(200);
      expect(sourced.body.warning).toBeUndefined();
      // A wildcard's last part may be cut short; a header's value may hold "|".
      expect((await putOverride({ key: `${key}|2001:db8:*`, source: ["header:x-user", "ip/56"] })).status).toBe(200);
      expect((await putOverride({ key: `${key}|x`, source: "header:x-api-key" })).status).toBe(200);
    });

    it("PUT /v1/overrides: an IPv4 part written as if ip/56 masked it (bob|127.0.0.0) answers 200 with a warning", async () => {
      const user = crypto.randomUUID();
      const answer = await putOverride({ key: `${user}|127.0.0.0`, source: ["header:x-user", "ip/56"] });
      expect(answer).toMatchObject({ status: 200, body: { key: `${user}|127.0.0.0`, warning: expect.stringMatching(/part 1 "127.0.0.0" is one IPv4 address: an "ip\/N" source counts IPv4 clients whole/) } });
      expect((await putOverride({ key: `${user}|127.0.0.1`, source: ["header:x-user", "ip/56"] })).body.warning).toBeUndefined();
      // Without a source it is for /v1 keys, which may use any policy: no warning.
      expect((await putOverride({ key: user })).body.warning).toBeUndefined();
    });
  });
}

/** The driver of a `spillway serve` at `url` (token `test-token`, as gateway-helpers.ts starts it). */
export function serveNamespaceDriver(url: string, limiter: Limiter): NamespaceDriver {
  return {
    api: async (path, body, method = "POST") => {
      const response = await fetch(`${url}${path}`, { method, headers: { authorization: "Bearer test-token", "content-type": "application/json" }, body: JSON.stringify(body) });
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
