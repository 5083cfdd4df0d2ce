import { afterAll, beforeAll, describe, expect, it as vitestIt } from "vitest";
import type { Limiter } from "../../../../src/core/limiter.js";
import { loadRlsConfig } from "../../../../src/node/grpc/files.js";
import { type RunningRlsServer, startRlsServer } from "../../../../src/node/grpc/server.js";
import { RlsStats } from "../../../../src/rls/stats.js";
import { README_CONFIGS, type RlsClient, configDir, d, freshSecond, rlsClient, unique } from "./rls-helpers.js";

const MAX_UINT32 = 4_294_967_295;

/**
 * How the suite's service gets README_CONFIGS: by default from the files; test/unit/node/grpc/xds-readme.test.ts
 * pushes them over xDS instead, and skips the cases whose config a RateLimitConfig cannot carry.
 */
export interface RlsSuiteServing {
  start(limiter: Limiter, stats: RlsStats): Promise<{ server: RunningRlsServer; close(): Promise<void> }>;
  /** Titles (their beginnings) of the cases to skip. */
  skip: readonly string[];
}

/**
 * The reference's README examples through a real gRPC client, on one store: the memory store
 * (test/unit/node/grpc/memory.test.ts), Redis and Redis Cluster (test/redis/rls.test.ts).
 */
export function describeRlsSuite(name: string, makeLimiter: () => Promise<{ limiter: Limiter; close(): Promise<void> }>, serving?: RlsSuiteServing): void {
  const it = (title: string, body: () => Promise<void>) => (serving?.skip.some((start) => title.startsWith(start)) ? vitestIt.skip : vitestIt)(title, body);
  describe(`Envoy RLS on ${name}`, () => {
    let store: { limiter: Limiter; close(): Promise<void> };
    let server: RunningRlsServer;
    let client: RlsClient;
    let closeServer: () => Promise<void>;
    const stats = new RlsStats();

    beforeAll(async () => {
      store = await makeLimiter();
      if (serving) ({ server, close: closeServer } = await serving.start(store.limiter, stats));
      else {
        server = await startRlsServer({ limiter: store.limiter, config: await loadRlsConfig(await configDir(README_CONFIGS)), port: 0, stats, responseHeaders: true });
        closeServer = () => server.close();
      }
      client = rlsClient(server.address);
    });

    afterAll(async () => {
      client?.close();
      await closeServer?.();
      await store?.close();
    });

    it("mongo_cps: each database value has its own 500/s; an unlisted value has no limit", async () => {
      await freshSecond();
      const users = await client.ask("mongo_cps", [d(["database", "users"])], { hitsAddend: 500 });
      expect(users.overall_code).toBe("OK");
      expect(users.statuses[0]).toMatchObject({ code: "OK", current_limit: { requests_per_unit: 500, unit: "SECOND" }, limit_remaining: 0 });
      expect((await client.ask("mongo_cps", [d(["database", "users"])])).overall_code).toBe("OVER_LIMIT");
      expect((await client.ask("mongo_cps", [d(["database", "default"])])).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 499 });
      const other = await client.ask("mongo_cps", [d(["database", "orders"])]);
      expect(other.overall_code).toBe("OK");
      expect(other.statuses[0]!.current_limit).toBeUndefined();
    });

    it("messaging: nested descriptors, decided all-or-nothing", async () => {
      const number = unique("206");
      const marketing = [d(["message_type", "marketing"], ["to_number", number]), d(["to_number", number])];
      for (let i = 1; i <= 5; i++) {
        const answer = await client.ask("messaging", marketing);
        expect(answer.overall_code).toBe("OK");
        expect(answer.statuses.map((status) => status.limit_remaining)).toEqual([5 - i, 100 - i]);
      }
      const sixth = await client.ask("messaging", marketing);
      expect(sixth.overall_code).toBe("OVER_LIMIT");
      expect(sixth.statuses.map((status) => status.code)).toEqual(["OVER_LIMIT", "OK"]);
      // The denied request took nothing from the per-number counter: 95 left, not 94.
      expect(sixth.statuses[1]!.limit_remaining).toBe(95);
      expect(sixth.response_headers_to_add?.map((header) => header.key)).toEqual(["RateLimit-Policy", "RateLimit", "Retry-After"]);
      const plain = await client.ask("messaging", [d(["to_number", number])]);
      expect(plain.statuses[0]).toMatchObject({ code: "OK", current_limit: { requests_per_unit: 100, unit: "DAY" }, limit_remaining: 94 });
      // Example 4's rule: more entries than the tree has levels match nothing.
      expect((await client.ask("messaging", [d(["to_number", number], ["extra", "x"])])).statuses[0]!.current_limit).toBeUndefined();
    });

    it("per IP: 10/s per address, a blocked address, an unlimited one", async () => {
      await freshSecond();
      const address = `192.0.2.${Math.floor(Math.random() * 250)}`;
      expect((await client.ask("edge_proxy_per_ip", [d(["remote_address", address])], { hitsAddend: 10 })).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 0 });
      expect((await client.ask("edge_proxy_per_ip", [d(["remote_address", address])])).overall_code).toBe("OVER_LIMIT");
      const blocked = await client.ask("edge_proxy_per_ip", [d(["remote_address", "50.0.0.5"])]);
      expect(blocked.overall_code).toBe("OVER_LIMIT");
      expect(blocked.statuses[0]).toMatchObject({ code: "OVER_LIMIT", current_limit: { requests_per_unit: 0, unit: "SECOND" }, limit_remaining: 0 });
      for (let i = 0; i < 15; i++) {
        const free = await client.ask("edge_proxy_per_ip", [d(["remote_address", "10.0.0.1"])]);
        expect(free.statuses[0]).toMatchObject({ code: "OK", limit_remaining: MAX_UINT32 });
      }
    });

    it("shadow mode answers OK and counts the would-be denials; its sibling rule is enforced", async () => {
      await freshSecond();
      const before = stats.counts.get("example6\u0000service.user_user-a")?.counts.shadow_mode ?? 0;
      const shadowed = [d(["service", "auth-service"], ["user", "user-a"])];
      expect((await client.ask("example6", shadowed, { hitsAddend: 10 })).overall_code).toBe("OK");
      const over = await client.ask("example6", shadowed, { hitsAddend: 3 });
      expect(over.overall_code).toBe("OK");
      expect(over.statuses[0]!.code).toBe("OK");
      expect(stats.counts.get("example6\u0000service.user_user-a")!.counts.shadow_mode).toBe(before + 3);
      const enforced = [d(["service", "auth-service"], ["user", "user-b"])];
      expect((await client.ask("example6", enforced, { hitsAddend: 20 })).overall_code).toBe("OK");
      expect((await client.ask("example6", enforced)).overall_code).toBe("OVER_LIMIT");
    });

    it("wildcard values: each matching value counts on its own, share_threshold shares one counter", async () => {
      const run = unique("v");
      expect((await client.ask("example9", [d(["key1", `value${run}a`])], { hitsAddend: 20 })).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 0 });
      expect((await client.ask("example9", [d(["key1", `value${run}a`])])).overall_code).toBe("OVER_LIMIT");
      expect((await client.ask("example9", [d(["key1", `value${run}b`])])).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 19 });
      expect((await client.ask("example9", [d(["path", `/api/${run}/action`])])).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 19 });
      expect((await client.ask("example9", [d(["path", `/api/${run}/other`])])).statuses[0]!.current_limit).toBeUndefined();
      const first = await client.ask("example9", [d(["files", `files/${run}.pdf`])]);
      const second = await client.ask("example9", [d(["files", `files/${run}.csv`])]);
      expect(second.statuses[0]!.limit_remaining).toBe(first.statuses[0]!.limit_remaining! - 1);
    });

    it("replaces: the replacing limit applies and the replaced one is left untouched", async () => {
      await freshSecond();
      const both = [d(["key_1", "value_1"], ["user", "bkthomps"]), d(["key_2", "value_2"], ["user", "bkthomps"])];
      const answer = await client.ask("example7", both, { hitsAddend: 6 });
      expect(answer.overall_code).toBe("OK");
      expect(answer.statuses[0]!.current_limit).toBeUndefined();
      expect(answer.statuses[1]).toMatchObject({ current_limit: { requests_per_unit: 10 }, limit_remaining: 4 });
      // 6 > 5, yet specific_limit was never counted: alone, its first request leaves 4 of 5.
      expect((await client.ask("example7", [both[0]!])).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 4 });
    });

    it("Spillway's extensions: several policies on one descriptor, any period, another algorithm", async () => {
      const key = unique("key");
      const decided = [];
      for (let i = 0; i < 3; i++) decided.push(await client.ask("spillway_extensions", [d(["api_key", key])]));
      expect(decided.map((answer) => answer.overall_code)).toEqual(["OK", "OK", "OVER_LIMIT"]);
      expect(decided[2]!.statuses[0]!.current_limit).toMatchObject({ name: "per-10s", requests_per_unit: 2 });
      const tenant = unique("tenant");
      expect((await client.ask("spillway_extensions", [d(["tenant", tenant])], { hitsAddend: 3 })).statuses[0]!.limit_remaining).toBe(0);
      expect((await client.ask("spillway_extensions", [d(["tenant", tenant])])).overall_code).toBe("OVER_LIMIT");
    });

    it('"atomic": false counts each descriptor on its own, as the reference does', async () => {
      const a = unique("a");
      const b = unique("b");
      expect((await client.ask("independent", [d(["a", a]), d(["b", b])])).overall_code).toBe("OK");
      const second = await client.ask("independent", [d(["a", a]), d(["b", b])]);
      expect(second.overall_code).toBe("OVER_LIMIT");
      // b was counted although the request was refused: 5 - 2 left.
      expect(second.statuses[1]!.limit_remaining).toBe(3);
    });

    it("per-descriptor hits_addend is each descriptor's cost; 0 checks without counting", async () => {
      const number = unique("207");
      const answer = await client.ask("messaging", [{ ...d(["to_number", number]), hits_addend: { value: 40 } }]);
      expect(answer.statuses[0]!.limit_remaining).toBe(60);
      const peek = await client.ask("messaging", [{ ...d(["to_number", number]), hits_addend: { value: 0 } }]);
      expect(peek.statuses[0]!.limit_remaining).toBe(60);
    });

    it("answers an unknown domain OK, a bad request INVALID_ARGUMENT naming the field, and health SERVING", async () => {
      expect((await client.ask("no-such-domain", [d(["k", "v"])])).overall_code).toBe("OK");
      await expect(client.raw({ domain: "messaging", descriptors: [{ entries: [{ key: "", value: "x" }] }] })).rejects.toMatchObject({ code: 3, details: "descriptors.0.entries.0.key: must not be empty" });
      await expect(client.raw({ domain: "", descriptors: [] })).rejects.toMatchObject({ code: 3, details: "domain: must not be empty" });
      expect(await client.health()).toEqual({ status: "SERVING" });
      expect(await client.health("envoy.service.ratelimit.v3.RateLimitService")).toEqual({ status: "SERVING" });
      await expect(client.health("other")).rejects.toMatchObject({ code: 5 });
    });
  });
}
