import { describe, expect, it } from "vitest";
import type { GatewayDriver } from "./gateway-table.js";

// h/customer's block of the gateway table: plans (match.host, match.headers), composite keys
// and overrides, run on the Node and the Worker gateway with the rest of the table. Its
// policies, routes and overrides join GATEWAY_TABLE_CONFIG.

export const PLANS_POLICIES = [
  { name: "plan-free", algorithm: "fixed-window", limit: 2, period: "1h" },
  { name: "plan-pro", algorithm: "fixed-window", limit: 5, period: "1h" },
  { name: "plan-tenant", algorithm: "fixed-window", limit: 4, period: "1h" },
  { name: "tiered", algorithm: "fixed-window", limit: 2, period: "1h" },
];

export const PLANS_ROUTES = [
  // Plans are routes, tried in order: the pro plan first, then a tenant host, then everyone else.
  { match: { path: "/plan/*", headers: { "x-plan": ["pro", "enterprise"] } }, key: "header:x-user", policies: ["plan-pro"] },
  { match: { path: "/plan/*", host: "*.tenant.test" }, key: "header:x-user", policies: ["plan-tenant"] },
  { match: { path: "/plan/*" }, key: "header:x-user", policies: ["plan-free"] },
  { match: { path: "/combo/*" }, key: ["header:x-user", "ip"], policies: ["plan-free"] },
  { match: { path: "/tiered/*" }, key: "header:x-user", policies: ["tiered"] },
  { match: { path: "/tiered-ip/*" }, key: "ip", policies: ["tiered"] },
];

const fresh = (prefix = "user") => `${prefix}-${crypto.randomUUID()}`;
const freshIp = () => {
  const [a, b, c] = crypto.getRandomValues(new Uint8Array(3));
  return `10.${a! % 255}.${b}.${c}`;
};

/** The exact key and the address are used by one case each: their state outlives the case on the Worker. */
const EXACT = `gold-plus-exact-${crypto.randomUUID()}`;
const OVERRIDDEN_IP = freshIp();
export const PLANS_OVERRIDES = [
  { policy: "tiered", key: "gold-*", source: "header:x-user", limit: 4 },
  { policy: "tiered", key: "gold-plus-*", source: "header:X-User", limit: 6 },
  { policy: "tiered", key: EXACT, source: "header:x-user", limit: 1 },
  // For the address only: a header that spells the same value must not borrow it.
  { policy: "tiered", key: OVERRIDDEN_IP, source: "ip", limit: 3 },
  // No source: for keys given to /v1/check and rateLimit(), never a gateway route's.
  { policy: "tiered", key: "given-*", limit: 5 },
];

/** Registers the block's cases; `driverOf` is called once the runner's beforeAll has run. */
export function gatewayPlansConformance(runtime: string, driverOf: () => GatewayDriver): void {
  /** Statuses of `count` requests in a row, and the RateLimit-Policy of the first. */
  async function run(path: string, count: number, from: { ip: string; headers: Record<string, string> }) {
    const statuses: number[] = [];
    let policy: string | null = null;
    for (let i = 0; i < count; i++) {
      const reply = await driverOf().send(path, from);
      statuses.push(reply.status);
      policy ??= reply.header("ratelimit-policy");
      await reply.text();
    }
    return { statuses, policy };
  }
  const ok = (n: number, denied = 1) => [...Array<number>(n).fill(200), ...Array<number>(denied).fill(429)];

  describe(`${runtime} gateway conformance: plans, composite keys, overrides`, () => {
    it("match.headers picks the plan's route (a value from a list); without it the next route matches", async () => {
      const pro = await run("/plan/a", 6, { ip: freshIp(), headers: { "x-user": fresh(), "x-plan": "enterprise" } });
      expect(pro).toEqual({ statuses: ok(5), policy: '"plan-pro";q=5;w=3600' });
      const other = await run("/plan/a", 3, { ip: freshIp(), headers: { "x-user": fresh(), "x-plan": "basic" } });
      expect(other).toEqual({ statuses: ok(2), policy: '"plan-free";q=2;w=3600' });
    });

    it("match.host matches *.example.com case-insensitively, port ignored, not the bare domain", async () => {
      const tenant = await run("/plan/a", 5, { ip: freshIp(), headers: { "x-user": fresh(), host: "Acme.Tenant.test:8443" } });
      expect(tenant).toEqual({ statuses: ok(4), policy: '"plan-tenant";q=4;w=3600' });
      const bare = await run("/plan/a", 1, { ip: freshIp(), headers: { "x-user": fresh(), host: "tenant.test" } });
      expect(bare.policy).toBe('"plan-free";q=2;w=3600');
    });

    it("a composite key counts one header from two addresses as two keys, and needs every part", async () => {
      const user = fresh();
      const [first, second] = [freshIp(), freshIp()];
      expect((await run("/combo/a", 3, { ip: first, headers: { "x-user": user } })).statuses).toEqual(ok(2));
      expect((await run("/combo/a", 3, { ip: second, headers: { "x-user": user } })).statuses).toEqual(ok(2));
      const missing = await driverOf().send("/combo/a", { ip: freshIp(), headers: {} });
      expect(missing.status).toBe(400);
      expect(JSON.parse(await missing.text()).detail).toMatch(/does not carry the x-user header/);
    });

    it("overrides: the longest wildcard wins, an exact key beats every wildcard, others keep the policy", async () => {
      const gold = await run("/tiered/a", 5, { ip: freshIp(), headers: { "x-user": fresh("gold") } });
      expect(gold).toEqual({ statuses: ok(4), policy: '"tiered";q=4;w=3600' });
      const plus = await run("/tiered/a", 7, { ip: freshIp(), headers: { "x-user": fresh("gold-plus") } });
      expect(plus).toEqual({ statuses: ok(6), policy: '"tiered";q=6;w=3600' });
      const exact = await run("/tiered/a", 2, { ip: freshIp(), headers: { "x-user": EXACT } });
      expect(exact).toEqual({ statuses: ok(1), policy: '"tiered";q=1;w=3600' });
      const plain = await run("/tiered/a", 3, { ip: freshIp(), headers: { "x-user": fresh("silver") } });
      expect(plain).toEqual({ statuses: ok(2), policy: '"tiered";q=2;w=3600' });
    });

    it("overrides are scoped by key source: an address's override is not borrowed by a header with the same value", async () => {
      const byHeader = await run("/tiered/a", 3, { ip: freshIp(), headers: { "x-user": OVERRIDDEN_IP } });
      expect(byHeader).toEqual({ statuses: ok(2), policy: '"tiered";q=2;w=3600' });
      const byAddress = await run("/tiered-ip/a", 4, { ip: OVERRIDDEN_IP, headers: {} });
      expect(byAddress).toEqual({ statuses: ok(3), policy: '"tiered";q=3;w=3600' });
      const given = await run("/tiered/a", 3, { ip: freshIp(), headers: { "x-user": fresh("given") } });
      expect(given).toEqual({ statuses: ok(2), policy: '"tiered";q=2;w=3600' });
    });
  });
}
