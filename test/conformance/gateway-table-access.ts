import { describe, expect, it } from "vitest";
import type { GatewayDriver } from "./gateway-table.js";

// h-keysrc's block of the gateway table: allow and deny keys scoped by key source, run on the
// Node and the Worker gateway with the rest of the table. A client sends what it likes in any
// header, so an allowed API key sent as another header must be counted like any other value.
// Its policies, routes and list entries join GATEWAY_TABLE_CONFIG.

export const ACCESS_POLICIES = [{ name: "access-three", algorithm: "fixed-window", limit: 3, period: "1h" }];

export const ACCESS_ROUTES = [
  { match: { path: "/access-user/*" }, key: "header:x-user", policies: ["access-three"] },
  { match: { path: "/access-key/*" }, key: "header:x-api-key", policies: ["access-three"] },
  { match: { path: "/access-fallback/*" }, key: "header:x-user", fallbackKey: "header:x-api-key", policies: ["access-three"] },
  { match: { path: "/access-combo/*" }, key: ["header:x-api-key", "ip"], policies: ["access-three"] },
];

const freshIp = () => {
  const [a, b, c] = crypto.getRandomValues(new Uint8Array(3));
  return `10.${a! % 255}.${b}.${c}`;
};

// One value per case: a value's counters outlive a case on the Worker.
const VIP = `vip-${crypto.randomUUID()}`;
const VIP_FALLBACK = `vip-fallback-${crypto.randomUUID()}`;
const VIP_COMBO = `vip-combo-${crypto.randomUUID()}`;
const COMBO_IP = freshIp();
const BLOCKED = `blocked-${crypto.randomUUID()}`;

export const ACCESS_ALLOW_KEYS = [
  { key: VIP, source: "header:x-api-key" },
  { key: VIP_FALLBACK, source: "header:X-Api-Key" },
  // A composite key's entry names its parts in order; its key is the joined form.
  { key: `${VIP_COMBO}|${COMBO_IP}`, source: ["header:x-api-key", "ip"] },
];

/** "banned" (a bare key, refused from every source) is the table's own. */
export const ACCESS_DENY_KEYS = [{ key: BLOCKED, source: "header:x-api-key" }];

/** Registers the block's cases; `driverOf` is called once the runner's beforeAll has run. */
export function gatewayAccessConformance(runtime: string, driverOf: () => GatewayDriver): void {
  /** Statuses of `count` requests sent one after another. */
  async function run(path: string, count: number, from: { ip: string; headers: Record<string, string> }) {
    const statuses: number[] = [];
    for (let i = 0; i < count; i++) {
      const reply = await driverOf().send(path, from);
      statuses.push(reply.status);
      await reply.text();
    }
    return statuses;
  }
  const ok = (n: number, denied = 1) => [...Array<number>(n).fill(200), ...Array<number>(denied).fill(429)];

  describe(`${runtime} gateway conformance: allow and deny keys scoped by key source`, () => {
    it("an allowed API key sent as x-user on a route keyed by x-user is limited: a burst of 20 gets exactly the limit", async () => {
      const gw = driverOf();
      gw.origin.ok();
      const before = gw.origin.hits();
      // Each from its own address, all at once: nothing but the value ties them together.
      const replies = await Promise.all(Array.from({ length: 20 }, () => gw.send("/access-user/a", { ip: freshIp(), headers: { "x-user": VIP } })));
      await Promise.all(replies.map((reply) => reply.text()));
      const statuses = replies.map((reply) => reply.status).sort();
      expect(statuses).toEqual(ok(3, 17));
      expect(gw.origin.hits() - before).toBe(3);
      expect(replies.find((reply) => reply.status === 429)!.header("ratelimit")).toMatch(/^"access-three";r=0;/);
      // From the source the entry names, the same value is never limited.
      expect(await run("/access-key/a", 6, { ip: freshIp(), headers: { "x-api-key": VIP } })).toEqual(ok(6, 0));
    });

    it("a deny key with a source refuses only that source's value; a bare deny key refuses it from every source", async () => {
      expect(await run("/access-key/a", 1, { ip: freshIp(), headers: { "x-api-key": BLOCKED } })).toEqual([403]);
      expect(await run("/access-user/a", 4, { ip: freshIp(), headers: { "x-user": BLOCKED } })).toEqual(ok(3));
      expect(await run("/access-key/a", 1, { ip: freshIp(), headers: { "x-api-key": "banned" } })).toEqual([403]);
      expect(await run("/access-user/a", 1, { ip: freshIp(), headers: { "x-user": "banned" } })).toEqual([403]);
    });

    it("a fallbackKey is a source of its own: the API key read by the fallback is allowed, the same value in x-user is not", async () => {
      expect(await run("/access-fallback/a", 5, { ip: freshIp(), headers: { "x-api-key": VIP_FALLBACK } })).toEqual(ok(5, 0));
      expect(await run("/access-fallback/a", 4, { ip: freshIp(), headers: { "x-user": VIP_FALLBACK, "x-api-key": VIP_FALLBACK } })).toEqual(ok(3));
    });

    it("a composite key's entry allows that key from that address only, and never the key alone on a route keyed by it", async () => {
      expect(await run("/access-combo/a", 5, { ip: COMBO_IP, headers: { "x-api-key": VIP_COMBO } })).toEqual(ok(5, 0));
      expect(await run("/access-combo/a", 4, { ip: freshIp(), headers: { "x-api-key": VIP_COMBO } })).toEqual(ok(3));
      expect(await run("/access-key/a", 4, { ip: COMBO_IP, headers: { "x-api-key": VIP_COMBO } })).toEqual(ok(3));
    });
  });
}
