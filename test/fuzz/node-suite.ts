import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import type { Limiter } from "../../src/core/limiter.js";
import { type RunningServer, startServer } from "../../src/node/serve/server.js";
import { type Answer, FUZZ_POLICIES, FUZZ_RUNS, answerOf, assertGeneratedBodies, nested } from "./bodies.js";

/**
 * The /v1 fuzz against `spillway serve`'s own server on a loopback port (the Node path that
 * once answered 500), with the store a suite gives it.
 */
export function nodeFuzzSuite(storeName: string, makeLimiter: () => Promise<Limiter>, runs = FUZZ_RUNS): void {
  describe(`/v1 fuzz on Node (${storeName}): no 5xx, every 400 names its field`, () => {
    let server: RunningServer;
    beforeAll(async () => {
      server = await startServer({ config: parseConfig({ policies: FUZZ_POLICIES }), limiter: await makeLimiter(), port: 0, token: "secret" });
    });
    afterAll(() => server?.close());

    async function send(route: string, body: string): Promise<Answer> {
      return answerOf(await fetch(`${server.url}${route}`, { method: "POST", headers: { authorization: "Bearer secret", "content-type": "application/json" }, body }));
    }

    it.each([
      ["key", "key"],
      ["policy", "policy.0"],
      ["cost", "cost"],
    ])("a %s nested 10,000 levels deep is a 400 naming %s", async (field, named) => {
      // The other fields once each: a field given twice is a 400 of its own ("appears twice").
      const others = Object.entries({ key: "k", policy: "p" }).filter(([name]) => name !== field);
      const body = `{${others.map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value)},`).join("")}${JSON.stringify(field)}:${nested(10_000, 1, false)}}`;
      const answer = await send("/v1/check", body);
      expect(answer.status).toBe(400);
      expect(answer.body?.field).toBe(named);
    });

    it("an inline policy's limit nested 10,000 levels deep is a 400 naming policy.limit", async () => {
      const answer = await send("/v1/check", `{"key":"k","policy":{"name":"x","limit":${nested(10_000, 1, true)},"period":"1m"}}`);
      expect(answer).toMatchObject({ status: 400, body: { field: "policy.limit" } });
    });

    it(`${runs} generated bodies`, async () => {
      await assertGeneratedBodies(send, runs);
    }, 120_000);
  });
}
