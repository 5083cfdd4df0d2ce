import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import type { Limiter } from "../../../../src/core/limiter.js";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";

// Credits rules that a balance's store must keep whoever asks (issue 45's attack), against the
// `spillway serve` server with the store a test file gives it (memory: credits-rules.test.ts;
// Redis: test/redis/credits-rules.test.ts): an inline policy may not take a configured
// policy's name with another shape, a read never writes, a field set twice is refused on every
// route, and a balance holds at most 1e15.
const config = parseConfig({
  policies: [
    { name: "tokens", algorithm: "credits", limit: 100 },
    { name: "per-minute", algorithm: "gcra", limit: 60, period: "1m" },
    { name: "seats", algorithm: "concurrency", limit: 2 },
  ],
});
const CAP = 1e15;

export function creditsRulesSuite(storeName: string, makeLimiter: () => Promise<Limiter>): void {
  describe(`credits rules on spillway serve (${storeName})`, () => {
    let server: RunningServer;
    let run = 0;
    beforeAll(async () => {
      server = await startServer({ config, limiter: await makeLimiter(), port: 0, token: "secret" });
    });
    afterAll(() => server?.close());

    /** A key of this run only (a Redis outlives a run). */
    const keyOf = (label: string) => `${label}-${process.pid}-${Date.now()}-${run++}`;
    const send = async (route: string, body: unknown) => {
      const response = await fetch(`${server.url}/v1/${route}`, {
        method: "POST",
        headers: { authorization: "Bearer secret", "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
    };
    const balanceOf = async (key: string, policy: unknown = "tokens") => (await send("credits", { key, policy, add: 0 })).body.remaining;

    describe("an inline policy that takes a configured policy's name keeps its shape", () => {
      it("another algorithm is refused naming policy.algorithm, and the spent balance stays spent", async () => {
        const key = keyOf("spent");
        expect(await send("check", { key, policy: "tokens", cost: 100 })).toMatchObject({ status: 200, body: { remaining: 0 } });
        const refill = await send("check", { key, policy: { name: "tokens", algorithm: "fixed-window", limit: 100, period: "1m" } });
        expect(refill).toMatchObject({ status: 400, body: { field: "policy.algorithm" } });
        expect(refill.body.detail).toBe(
          'policy.algorithm: must be "credits", as the configured policy "tokens" has it: a key\'s state belongs to the policy\'s name, so an inline policy of that name must keep its shape (give its name alone, or another name), got "fixed-window"',
        );
        expect(await send("check", { key, policy: "tokens" })).toMatchObject({ status: 429, body: { remaining: 0 } });
        expect(await balanceOf(key)).toBe(0);
      });

      it.each<[string, string, Record<string, unknown>, string]>([
        ["a credits policy's limit", "check", { policy: { name: "tokens", algorithm: "credits", limit: 5000 } }, "policy.limit"],
        ["a credits policy's refill", "peek", { policy: { name: "tokens", algorithm: "credits", limit: 100, refill: { calendar: "day" } } }, "policy.refill.calendar"],
        ["a GCRA's period", "check", { policy: { name: "per-minute", algorithm: "gcra", limit: 60, period: "1s" } }, "policy.period"],
        ["a GCRA's burst", "check", { policy: { name: "per-minute", algorithm: "gcra", limit: 60, period: "1m", burst: 600 } }, "policy.burst"],
        ["a GCRA's algorithm in a stack", "check", { policy: ["tokens", { name: "per-minute", algorithm: "sliding-window", limit: 60, period: "1m" }] }, "policy.1.algorithm"],
        ["a concurrency policy's limit", "acquire", { policy: { name: "seats", algorithm: "concurrency", limit: 20 } }, "policy.limit"],
        ["one name twice in a stack, in two shapes", "check", { policy: [{ name: "mine", limit: 1, period: "1s" }, { name: "mine", algorithm: "credits", limit: 9 }] }, "policy.1"],
      ])("%s is refused naming %s", async (_label, route, body, field) => {
        expect(await send(route, { key: keyOf("shape"), ...body })).toMatchObject({ status: 400, body: { field } });
      });

      it("the same shape (and fields that shape no state) are the configured policy's state", async () => {
        const key = keyOf("same");
        expect(await send("check", { key, policy: { name: "tokens", algorithm: "credits", limit: 100, warnAt: 0.5 }, cost: 30 })).toMatchObject({ status: 200, body: { remaining: 70 } });
        expect(await send("check", { key, policy: { name: "per-minute", limit: 60, period: 60_000, failMode: "open" } })).toMatchObject({ status: 200 });
        expect(await balanceOf(key)).toBe(70);
      });
    });

    describe("a read (add 0) never writes", () => {
      it("a configured balance read through an inline policy of its name with its balance as limit: refused, the balance kept", async () => {
        const key = keyOf("read");
        expect(await send("credits", { key, policy: "tokens", set: 5000 })).toMatchObject({ body: { remaining: 5000 } });
        expect(await send("credits", { key, policy: { name: "tokens", algorithm: "credits", limit: 5000 }, add: 0 })).toMatchObject({ status: 400, body: { field: "policy.limit" } });
        expect(await balanceOf(key)).toBe(5000);
      });

      it("an inline policy's balance read under another limit is not dropped", async () => {
        const key = keyOf("inline-read");
        const small = { name: "wallet", algorithm: "credits", limit: 100 };
        expect(await send("credits", { key, policy: small, set: 5000 })).toMatchObject({ body: { remaining: 5000 } });
        expect(await balanceOf(key, { ...small, limit: 5000 })).toBe(5000);
        expect(await balanceOf(key, small)).toBe(5000);
      });
    });

    describe("a field set twice is a 400 naming it, on every /v1 route", () => {
      it("POST /v1/credits: set twice, the balance unchanged", async () => {
        const key = keyOf("twice");
        const refused = await send("credits", `{"key":${JSON.stringify(key)},"policy":"tokens","set":10,"set":1000000}`);
        expect(refused).toMatchObject({ status: 400, body: { field: "set", detail: "set: appears twice: set each field once (JSON keeps the last one silently)" } });
        expect(await balanceOf(key)).toBe(100);
      });

      it.each([
        ["check", '{"key":"k","policy":"per-minute","cost":1,"cost":0}', "cost"],
        ["check", '{"key":"k","policy":{"name":"inline","limit":1,"period":"1s","limit":1000000}}', "policy.limit"],
        ["check", '{"key":"k","policy":["tokens",{"name":"x","limit":1,"period":"1s","period":"1d"}]}', "policy.1.period"],
        ["peek", '{"key":"a","key":"b","policy":"per-minute"}', "key"],
        ["reset", '{"key":"k","policy":"per-minute","policy":"tokens"}', "policy"],
        ["acquire", '{"key":"k","policy":"seats","maxWaitMs":0,"maxWaitMs":1000}', "maxWaitMs"],
        ["release", '{"key":"k","policy":"seats","leaseId":"a","leaseId":"b"}', "leaseId"],
        ["extend", '{"key":"k","policy":"seats","leaseId":"a","leaseMs":1000,"leaseMs":9000}', "leaseMs"],
        ["credits", '{"key":"k","policy":"tokens","add":1,"source":"ip","source":"header:x-api-key"}', "source"],
      ])("/v1/%s %s: names %s", async (route, body, field) => {
        expect(await send(route, body)).toMatchObject({ status: 400, body: { field } });
      });
    });

    describe("a balance holds at most 1e15", () => {
      it("set 1e15 is accepted, 1e15 + 1 refused; an add that would cross the cap is refused and changes nothing", async () => {
        const key = keyOf("cap");
        expect(await send("credits", { key, policy: "tokens", set: CAP })).toMatchObject({ status: 200, body: { remaining: CAP } });
        expect(await send("credits", { key, policy: "tokens", set: CAP + 1 })).toMatchObject({ status: 400, body: { field: "set" } });
        const crossing = await send("credits", { key, policy: "tokens", add: 1 });
        expect(crossing).toMatchObject({ status: 400, body: { field: "add" } });
        expect(crossing.body.detail).toBe(`add: would take the balance to ${CAP + 1}, past the most a balance holds (${CAP}); it holds ${CAP}`);
        expect(await balanceOf(key)).toBe(CAP);
        // /v1/check and /v1/credits agree on the balance, sign and units.
        const spent = await send("check", { key, policy: "tokens", cost: 1 });
        expect(spent).toMatchObject({ status: 200, body: { remaining: CAP - 1 } });
        expect(spent.headers.get("ratelimit")).toBe(`"tokens";r=${CAP - 1};t=0`);
        expect(await send("credits", { key, policy: "tokens", add: 2 })).toMatchObject({ status: 400, body: { field: "add" } });
        expect(await send("credits", { key, policy: "tokens", add: 1 })).toMatchObject({ status: 200, body: { remaining: CAP } });
        expect(await send("credits", { key, policy: "tokens", add: CAP })).toMatchObject({ status: 400, body: { field: "add" } });
      });

      it("a key never seen starts at its limit: an add of 1e15 crosses the cap", async () => {
        const key = keyOf("cap-fresh");
        expect(await send("credits", { key, policy: "tokens", add: CAP })).toMatchObject({ status: 400, body: { field: "add" } });
        expect(await send("credits", { key, policy: "tokens", add: CAP - 100 })).toMatchObject({ status: 200, body: { remaining: CAP } });
      });

      it.each([
        ["a policy's limit", { name: "big", algorithm: "credits", limit: CAP + 1 }, "policy.limit"],
        ["a refill's to", { name: "big", algorithm: "credits", limit: 10, refill: { calendar: "day", to: CAP + 1 } }, "policy.refill.to"],
      ])("%s past it is refused naming %s", async (_label, policy, field) => {
        expect(await send("credits", { key: keyOf("cap-policy"), policy, add: 1 })).toMatchObject({ status: 400, body: { field } });
      });
    });
  });
}
