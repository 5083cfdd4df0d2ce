import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { Limiter } from "../../../../src/core/limiter.js";
import { type RunningRlsServer, startRlsServer } from "../../../../src/node/grpc/server.js";
import { parseRlsConfig } from "../../../../src/rls/config.js";
import { parseRlsText } from "../../../../src/rls/files.js";
import { type RlsClient, d, rlsClient } from "./rls-helpers.js";

/** envoyproxy/ratelimit's own examples/ratelimit/config/example.yaml, as the reference ships it. */
const EXAMPLE = new URL("../../fixtures/envoy-example.yaml", import.meta.url);
/** A fixed clock in the middle of a minute: the example's per-minute windows never roll mid-test. */
export const QUOTA_NOW_MS = Date.UTC(2026, 0, 1, 12, 0, 30);

/** Puts the example's config into a started server another way (xDS: test/unit/node/grpc/xds-readme.test.ts); answers its stop. */
export type QuotaSuiteDelivery = (server: RunningRlsServer, name: string, yaml: string) => Promise<() => Promise<void>>;

/**
 * quota_mode, global modes and dynamic metadata with the reference's example.yaml, on a store
 * made fresh for each server (on QUOTA_NOW_MS): the memory store (test/unit/node/grpc/quota.test.ts)
 * and Redis, whose stacked decision (stack.lua) reports each descriptor of a refused stack
 * (test/redis/rls-quota.test.ts).
 */
export function describeQuotaSuite(name: string, makeLimiter: () => Promise<{ limiter: Limiter; close(): Promise<void> }>, deliver?: QuotaSuiteDelivery): void {
  const running: { server: RunningRlsServer; client: RlsClient; store: { close(): Promise<void> }; stop?: () => Promise<void> }[] = [];
  afterEach(async () => {
    for (const { server, client, store, stop } of running.splice(0)) {
      client.close();
      await stop?.();
      await server.close();
      await store.close();
    }
  });

  async function serve(options: { quotaMode?: boolean; shadowMode?: boolean; dynamicMetadata?: boolean } = {}) {
    const yaml = await readFile(EXAMPLE, "utf8");
    const store = await makeLimiter();
    const config = deliver ? { domains: new Map() } : parseRlsConfig([parseRlsText("example.yaml", yaml)]);
    const server = await startRlsServer({ limiter: store.limiter, config, port: 0, ...options });
    const stop = deliver ? await deliver(server, "example.yaml", yaml) : undefined;
    const client = rlsClient(server.address);
    running.push({ server, client, store, ...(stop ? { stop } : {}) });
    return client;
  }

  const s1 = d(["service", "service_1"]);
  const s2 = d(["service", "service_2"]);
  const foo = d(["foo", "x"]);
  const codes = (answer: { statuses: { code: string }[] }) => answer.statuses.map((status) => status.code);

  describe(`quota_mode on ${name}`, () => {
    it("loads the reference's example.yaml as it is", async () => {
      const config = parseRlsConfig([parseRlsText("example.yaml", await readFile(EXAMPLE, "utf8"))]);
      const rl = config.domains.get("rl")!;
      const service1 = rl.level.exact.get("service")!.get("service_1")!;
      expect(service1.quotaMode).toBe(true);
      expect(service1.metadata).toEqual({ service_with_quota: { name: "service_1" } });
      expect(rl.level.byKey.get("foo")!.quotaMode).toBe(false);
    });

    it("alone and over its limit: OVER_LIMIT (every quota descriptor of the request is over)", async () => {
      const client = await serve();
      expect((await client.ask("rl", [s1])).overall_code).toBe("OK");
      const over = await client.ask("rl", [s1]);
      expect(over.overall_code).toBe("OVER_LIMIT");
      expect(codes(over)).toEqual(["OVER_LIMIT"]);
    });

    it("beside a quota descriptor with room: OK, its status still OVER_LIMIT, and only the one with room is consumed", async () => {
      const client = await serve();
      await client.ask("rl", [s1]); // service_1: 1 of 1 used
      const mixed = await client.ask("rl", [s1, s2]);
      expect(mixed.overall_code).toBe("OK");
      expect(codes(mixed)).toEqual(["OVER_LIMIT", "OK"]);
      expect(mixed.statuses[1]!.limit_remaining).toBe(1); // service_2 counted: 2 - 1
      const last = await client.ask("rl", [s1, s2]);
      expect(last).toMatchObject({ overall_code: "OK", statuses: [{ code: "OVER_LIMIT" }, { code: "OK", limit_remaining: 0 }] });
      const both = await client.ask("rl", [s1, s2]);
      expect(both.overall_code).toBe("OVER_LIMIT");
      expect(codes(both)).toEqual(["OVER_LIMIT", "OVER_LIMIT"]);
    });

    it("a plain descriptor over its limit refuses, and the quota descriptor beside it is not consumed", async () => {
      const client = await serve();
      await client.ask("rl", [foo], { hitsAddend: 2 }); // foo: 2 of 2 used
      const refused = await client.ask("rl", [foo, s2]);
      expect(refused.overall_code).toBe("OVER_LIMIT");
      expect(codes(refused)).toEqual(["OVER_LIMIT", "OK"]);
      expect((await client.ask("rl", [s2])).statuses[0]!.limit_remaining).toBe(1); // the refused request took nothing
    });

    it("under a burst, admits no more than the quota descriptors hold", async () => {
      const client = await serve();
      const answers = await Promise.all(Array.from({ length: 30 }, () => client.ask("rl", [s1, s2])));
      const admitted = answers.filter((answer) => answer.overall_code === "OK").length;
      // The first admitted request takes from both; then only service_2 has room (2 in all).
      expect(admitted).toBe(2);
      expect(codes((await client.ask("rl", [s1, s2])))).toEqual(["OVER_LIMIT", "OVER_LIMIT"]);
    });

    it("global quota mode makes every descriptor a quota descriptor", async () => {
      const client = await serve({ quotaMode: true });
      await client.ask("rl", [foo], { hitsAddend: 2 });
      const answer = await client.ask("rl", [foo, d(["category", "account"])]);
      expect(answer.overall_code).toBe("OK");
      expect(codes(answer)).toEqual(["OVER_LIMIT", "OK"]);
      expect((await client.ask("rl", [foo])).overall_code).toBe("OVER_LIMIT");
      const plain = await serve();
      await plain.ask("rl", [foo], { hitsAddend: 2 });
      expect((await plain.ask("rl", [foo, d(["category", "account"])])).overall_code).toBe("OVER_LIMIT");
    });

    it("global shadow mode answers OK, the statuses as decided", async () => {
      const client = await serve({ shadowMode: true });
      await client.ask("rl", [foo], { hitsAddend: 2 });
      const answer = await client.ask("rl", [foo]);
      expect(answer.overall_code).toBe("OK");
      expect(codes(answer)).toEqual(["OVER_LIMIT"]);
    });
  });

  describe(`dynamic metadata (RESPONSE_DYNAMIC_METADATA) on ${name}`, () => {
    it("has the reference's shape: domain, descriptors, hitsAddend, and the metadata of the descriptors that passed", async () => {
      const client = await serve({ dynamicMetadata: true });
      await client.ask("rl", [s1]);
      const answer = await client.ask("rl", [s1, { ...s2, hits_addend: { value: 1 } }, { ...d(["foo", "y"]), limit: { requests_per_unit: 5, unit: "SECOND" } }], { hitsAddend: 1 });
      expect(answer.overall_code).toBe("OK");
      expect(answer.dynamic_metadata).toEqual({
        fields: {
          domain: { stringValue: "rl", kind: "stringValue" },
          hitsAddend: { numberValue: 1, kind: "numberValue" },
          descriptors: {
            kind: "listValue",
            listValue: {
              values: [
                { kind: "structValue", structValue: { fields: { entries: { kind: "listValue", listValue: { values: [{ kind: "stringValue", stringValue: "service=service_1" }] } } } } },
                {
                  kind: "structValue",
                  structValue: { fields: { entries: { kind: "listValue", listValue: { values: [{ kind: "stringValue", stringValue: "service=service_2" }] } }, hitsAddend: { kind: "numberValue", numberValue: 1 } } },
                },
                {
                  kind: "structValue",
                  structValue: { fields: { entries: { kind: "listValue", listValue: { values: [{ kind: "stringValue", stringValue: "foo=y" }] } }, limit: { kind: "stringValue", stringValue: "requests_per_unit:5 unit:SECOND" } } },
                },
              ],
            },
          },
          // service_1 is over: only service_2's metadata.
          metadata: { kind: "structValue", structValue: { fields: { service_with_quota: { kind: "structValue", structValue: { fields: { name: { kind: "stringValue", stringValue: "service_2" } } } } } } },
        },
      });
    });

    it("is absent unless enabled", async () => {
      const client = await serve();
      expect((await client.ask("rl", [s2])).dynamic_metadata).toBeUndefined();
    });
  });
}
