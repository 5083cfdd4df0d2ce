import { describe, expect, it } from "vitest";
import type { Policy } from "../../src/core/types.js";
import { type GatewayDriver, uniqueIp, uniqueUser } from "./gateway-table.js";

// Counting what the origin answers (docs/counting.md), written once and run by the Node gateway
// (test/unit/node/http/gateway-conformance.test.ts) and the Worker gateway (test/worker/gateway-conformance.test.ts)
// against the routes of GATEWAY_TABLE_CONFIG marked "counting". No node:* imports: loads in workerd.

const BUDGET: Policy = { name: "budget", algorithm: "fixed-window", limit: 100, periodMs: 3_600_000, burst: 100, leaseMs: 30_000, failMode: "closed" };
const WALLET: Policy = { name: "wallet", algorithm: "credits", limit: 50, periodMs: 1000, burst: 50, leaseMs: 30_000, failMode: "closed" };
const THREE: Policy = { name: "three", algorithm: "fixed-window", limit: 3, periodMs: 3_600_000, burst: 3, leaseMs: 30_000, failMode: "closed" };

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The `r` of one policy in a RateLimit field. */
function remainingOf(field: string | null, policy: string): number | undefined {
  const match = new RegExp(`"${policy}";r=(\\d+)`).exec(field ?? "");
  return match ? Number(match[1]) : undefined;
}

export function gatewayCountingConformance(runtime: string, driverOf: () => GatewayDriver): void {
  const as = (user: string, headers: Record<string, string> = {}) => ({ headers: { "x-user": user, ...headers }, ip: uniqueIp() });
  const remaining = async (user: string, policy: Policy) => (await driverOf().limiter.peek(`header:x-user:${user}`, [policy])).remaining;
  /** The `r` a counted answer known at its head shows: after its debit, or before it where debits are carried (GatewayDriver.headShowsBefore). */
  const shown = (after: number[], before: number[]) => (driverOf().headShowsBefore ? before : after);

  describe(`${runtime} gateway conformance: counting what the origin answers`, () => {
    it("count: only the listed statuses are debited, and the answer shows the state after its debit (or, where debits are carried, before it)", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      for (let i = 0; i < 4; i++) {
        const passed = await gw.send("/login/a", as(user));
        expect(passed.status).toBe(200);
        expect(remainingOf(passed.header("ratelimit"), "three")).toBe(3);
      }
      gw.counting.answer(401, {}, "wrong password");
      try {
        const failed = [];
        for (let i = 0; i < 3; i++) failed.push(await gw.send("/login/a", as(user)));
        expect(failed.map((reply) => reply.status)).toEqual([401, 401, 401]);
        expect(failed.map((reply) => remainingOf(reply.header("ratelimit"), "three"))).toEqual(shown([2, 1, 0], [3, 2, 1]));
        // The origin's answer is not a refusal: no Retry-After on it, even with nothing left.
        expect(failed[2]!.header("retry-after")).toBeNull();
        expect(await failed[2]!.text()).toBe("wrong password");
        const before = gw.origin.hits();
        const refused = await gw.send("/login/a", as(user));
        expect(refused.status).toBe(429);
        expect(refused.header("retry-after")).toMatch(/^\d+$/);
        expect(gw.origin.hits()).toBe(before);
      } finally {
        gw.origin.ok();
      }
      expect((await gw.send("/login/a", as(user))).status).toBe(429);
    });

    it("counts a status class, and a concurrency policy of the stack keeps its lease", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      gw.counting.answer(404, {}, "no such page");
      try {
        const missed = await gw.send("/login-slot/a", as(user));
        expect(missed.status).toBe(404);
        expect(missed.header("ratelimit")).toMatch(new RegExp(`^"three";r=${shown([2], [3])[0]};t=\\d+, "slot";r=0;t=\\d+$`));
        await missed.text();
        await waitFor(async () => (await gw.send("/login-slot/a", as(user))).status === 404);
        expect(await remaining(user, THREE)).toBe(1);
      } finally {
        gw.origin.ok();
      }
    });

    it("the honest bound: N concurrent failed logins against a limit L reach the origin at most L + N - 1 times, then none", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      const limit = 3;
      const concurrent = 5;
      const firstHit = gw.origin.hits();
      const hold = gw.counting.hold(401);
      let refused = 0;
      try {
        const replies = Array.from({ length: concurrent }, () =>
          gw.send("/login/a", as(user)).then((reply) => {
            if (reply.status === 429) refused++;
            return reply;
          }),
        );
        // Every request is either held at the origin or refused: none has been debited yet.
        await waitFor(() => hold.held() + refused === concurrent);
        expect(gw.origin.hits() - firstHit).toBe(hold.held());
        expect(hold.held()).toBeLessThanOrEqual(limit + concurrent - 1);
        hold.release();
        const statuses = (await Promise.all(replies)).map((reply) => reply.status);
        expect(statuses.filter((status) => status === 401)).toHaveLength(hold.held());
      } finally {
        gw.origin.ok();
      }
      // Every debit landed (before its answer's head, or with this peek where debits are carried): the key is spent, exactly.
      expect(await remaining(user, THREE)).toBe(0);
      const hits = gw.origin.hits();
      for (let i = 0; i < 3; i++) expect((await gw.send("/login/a", as(user))).status).toBe(429);
      expect(gw.origin.hits()).toBe(hits);
    });

    it("a response header's cost, clamped to max, shows in the answer; an unusable one costs `missing` and is logged once", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      try {
        gw.counting.answer(200, { "x-usage-tokens": "40" }, "ok");
        const first = await gw.send("/tokens-header/a", as(user));
        const second = await gw.send("/tokens-header/a", as(user));
        expect([remainingOf(first.header("ratelimit"), "budget"), remainingOf(second.header("ratelimit"), "budget")]).toEqual(shown([60, 20], [100, 60]));
        gw.counting.answer(200, { "x-usage-tokens": "500" }, "ok");
        // 20 left lets it through; its 500 is clamped to max (60), and the key goes 40 into debt.
        const third = await gw.send("/tokens-header/a", as(user));
        expect(third.status).toBe(200);
        expect(remainingOf(third.header("ratelimit"), "budget")).toBe(shown([0], [20])[0]);
        expect((await gw.send("/tokens-header/a", as(user))).status).toBe(429);

        const other = uniqueUser();
        gw.counting.answer(200, { "x-usage-tokens": "lots" }, "ok");
        const bad = [await gw.send("/tokens-header/a", as(other)), await gw.send("/tokens-header/a", as(other))];
        expect(bad.map((reply) => reply.status)).toEqual([200, 200]);
        expect(bad.map((reply) => remainingOf(reply.header("ratelimit"), "budget"))).toEqual(shown([99, 98], [100, 99]));
        expect(gw.logs.filter((entry) => entry.event === "usage-unusable" && entry.header === "x-usage-tokens")).toHaveLength(1);
      } finally {
        gw.origin.ok();
      }
    });

    it("a JSON answer's usage is debited once its body has passed; the head shows the state before", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      const body = JSON.stringify({ id: "cmpl-1", usage: { prompt_tokens: 10, total_tokens: 30 } });
      gw.counting.answer(200, { "content-type": "application/json" }, body);
      try {
        const first = await gw.send("/tokens-json/a", as(user));
        expect(remainingOf(first.header("ratelimit"), "budget")).toBe(100);
        expect(await first.text()).toBe(body);
        await waitFor(async () => (await remaining(user, BUDGET)) === 70);
        gw.counting.answer(200, { "content-type": "application/json" }, JSON.stringify({ usage: { total_tokens: "many" } }));
        const bad = await gw.send("/tokens-json/a", as(user));
        expect(bad.status).toBe(200);
        await bad.text();
        // Not a count: `missing` (2), logged.
        await waitFor(async () => (await remaining(user, BUDGET)) === 68);
        expect(gw.logs.some((entry) => entry.event === "usage-unusable" && entry.value === '"many"')).toBe(true);
      } finally {
        gw.origin.ok();
      }
    });

    it("a prepaid balance (credits): spent by the tokens the origin reports, refused once spent (no Retry-After), open again after a top-up", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      const key = `header:x-user:${user}`;
      gw.counting.answer(200, { "content-type": "application/json" }, JSON.stringify({ usage: { total_tokens: 30 } }));
      try {
        const first = await gw.send("/wallet/a", as(user));
        expect(first.status).toBe(200);
        expect(first.header("ratelimit-policy")).toBe('"wallet";q=50');
        await first.text();
        await waitFor(async () => (await remaining(user, WALLET)) === 20);
        // 20 left passes the peek; its 30 tokens were used, so the balance goes 10 below zero.
        await (await gw.send("/wallet/a", as(user))).text();
        await waitFor(async () => (await gw.limiter.peek(key, [WALLET])).allowed === false);
        const before = gw.origin.hits();
        const refused = await gw.send("/wallet/a", as(user));
        expect(refused.status).toBe(429);
        expect(refused.header("retry-after")).toBeNull();
        expect(gw.origin.hits()).toBe(before);
        expect(await gw.limiter.credits(key, WALLET, { add: 15 })).toEqual({ remaining: 5 });
        expect((await gw.send("/wallet/a", as(user))).status).toBe(200);
      } finally {
        gw.origin.ok();
      }
    });

    it("an SSE answer streams through unbuffered, and its last usage event is debited when the stream ends", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      const events = gw.counting.events();
      const delta = 'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n';
      const usage = 'data: {"choices":[],"usage":{"prompt_tokens":5,"total_tokens":25}}\n\ndata: [DONE]\n\n';
      try {
        const before = gw.origin.hits();
        const replying = gw.send("/tokens-json/a", as(user));
        // The first event goes out once the origin has the request (a head may wait for its first chunk).
        await waitFor(() => gw.origin.hits() > before);
        events.send(delta);
        const reply = await replying;
        expect(reply.status).toBe(200);
        expect(reply.header("content-type")).toMatch(/^text\/event-stream/);
        expect(remainingOf(reply.header("ratelimit"), "budget")).toBe(100);
        // The origin has not ended: the event reached the client on its own.
        expect(await reply.firstChunk()).toContain('"Hel"');
        expect(await remaining(user, BUDGET)).toBe(100);
        const rest = reply.text();
        events.send(usage);
        events.end();
        expect(await rest).toMatch(/"total_tokens":25\}\}\n\ndata: \[DONE\]\n\n$/);
        await waitFor(async () => (await remaining(user, BUDGET)) === 75);
      } finally {
        gw.origin.ok();
      }
    });

    it("an SSE client that leaves after the content, before the usage event, is still charged the usage", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      const events = gw.counting.events();
      try {
        const before = gw.origin.hits();
        const replying = gw.send("/tokens-json/a", as(user));
        await waitFor(() => gw.origin.hits() > before);
        events.send('data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n');
        const reply = await replying;
        expect(await reply.firstChunk()).toContain('"Hel"');
        await reply.cancel();
        // The client is gone; the origin goes on to its usage, which the gateway still reads.
        await sleep(50);
        events.send('data: {"choices":[],"usage":{"total_tokens":37}}\n\ndata: [DONE]\n\n');
        events.end();
        await waitFor(async () => (await remaining(user, BUDGET)) === 63);
      } finally {
        gw.origin.ok();
      }
    });

    it("a concurrency lease is held while the answer is read on after its client left, and returned when the origin is done", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      const events = gw.counting.events();
      try {
        const before = gw.origin.hits();
        const replying = gw.send("/tokens-slot/a", as(user));
        await waitFor(() => gw.origin.hits() > before);
        events.send('data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n');
        const reply = await replying;
        await reply.firstChunk();
        await reply.cancel();
        await sleep(50);
        // The origin still works for the request that left: the key's one slot is still taken.
        const hits = gw.origin.hits();
        expect((await gw.send("/tokens-slot/a", as(user))).status).toBe(429);
        expect(gw.origin.hits()).toBe(hits);
        events.send('data: {"choices":[],"usage":{"total_tokens":37}}\n\n');
        events.end();
        await waitFor(async () => (await remaining(user, BUDGET)) === 63);
      } finally {
        gw.origin.ok();
      }
      await waitFor(async () => (await (await gw.send("/tokens-slot/a", as(user))).text()) === "ok");
    });

    it("a 2 MiB JSON answer is charged its usage", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      const body = JSON.stringify({ choices: [{ message: { content: "é".repeat(1024 * 1024) } }], usage: { total_tokens: 44 } });
      gw.counting.answer(200, { "content-type": "application/json" }, body);
      try {
        const reply = await gw.send("/tokens-json/a", as(user));
        expect((await reply.text()).length).toBe(body.length);
        await waitFor(async () => (await remaining(user, BUDGET)) === 56);
      } finally {
        gw.origin.ok();
      }
    });

    it("an answer without usage (include_usage left out) costs the route's `max` by default, not 1", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      gw.counting.answer(200, { "content-type": "text/event-stream" }, 'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n');
      try {
        await (await gw.send("/tokens-max/a", as(user))).text();
        await waitFor(async () => (await remaining(user, BUDGET)) === 50);
      } finally {
        gw.origin.ok();
      }
    });

    it("a reported cost out of range costs the same in a header and in JSON: clamped to max", async () => {
      const gw = driverOf();
      try {
        for (const value of ["1e308", "Infinity", "9007199254740993"]) {
          const user = uniqueUser();
          gw.counting.answer(200, { "x-usage-tokens": value }, "ok");
          await (await gw.send("/tokens-header/a", as(user))).text();
          expect(await remaining(user, BUDGET)).toBe(40);
        }
        for (const value of ["1e308", "1e400", "9007199254740993"]) {
          const user = uniqueUser();
          gw.counting.answer(200, { "content-type": "application/json" }, `{"usage":{"total_tokens":${value}}}`);
          await (await gw.send("/tokens-max/a", as(user))).text();
          await waitFor(async () => (await remaining(user, BUDGET)) === 50);
        }
        // Negative and fractional values are no count: `missing` (1 on the header route, max 50 by default on the JSON one).
        const negative = uniqueUser();
        gw.counting.answer(200, { "x-usage-tokens": "-3" }, "ok");
        await (await gw.send("/tokens-header/a", as(negative))).text();
        expect(await remaining(negative, BUDGET)).toBe(99);
        const fractional = uniqueUser();
        gw.counting.answer(200, { "content-type": "application/json" }, '{"usage":{"total_tokens":1.5}}');
        await (await gw.send("/tokens-max/a", as(fractional))).text();
        await waitFor(async () => (await remaining(fractional, BUDGET)) === 50);
      } finally {
        gw.origin.ok();
      }
    });

    it("block: the refusal that follows counted failures starts a block that outlasts the window", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      gw.counting.answer(401, {}, "wrong password");
      try {
        // The window is one aligned second: on a loaded machine the failures can straddle its edge, so
        // fail until refused (a few windows' worth at most) rather than assume the third request is refused.
        let failures = 0;
        let refused = await gw.send("/login-block/a", as(user));
        while (refused.status === 401 && failures < 6) {
          failures++;
          refused = await gw.send("/login-block/a", as(user));
        }
        expect(refused.status).toBe(429);
        // Two failures a window are allowed: never refused before the second.
        expect(failures).toBeGreaterThanOrEqual(2);
        const hits = gw.origin.hits();
        // The block's hour, not the window's second.
        expect(Number(refused.header("retry-after"))).toBeGreaterThan(3000);
        await sleep(1100);
        // The window has refilled; the block holds.
        const blocked = await gw.send("/login-block/a", as(user));
        expect(blocked.status).toBe(429);
        expect(Number(blocked.header("retry-after"))).toBeGreaterThan(3000);
        expect(gw.origin.hits()).toBe(hits);
      } finally {
        gw.origin.ok();
      }
    });

    it("a request header's cost is checked before forwarding, at that cost", async () => {
      const gw = driverOf();
      const user = uniqueUser();
      const first = await gw.send("/cost-request/a", as(user, { "x-cost": "30" }));
      expect(first.status).toBe(200);
      expect(remainingOf(first.header("ratelimit"), "budget")).toBe(70);
      const before = gw.origin.hits();
      const refused = await gw.send("/cost-request/a", as(user, { "x-cost": "80" }));
      expect(refused.status).toBe(429);
      expect(gw.origin.hits()).toBe(before);
      const unnamed = await gw.send("/cost-request/a", as(user));
      expect(remainingOf(unnamed.header("ratelimit"), "budget")).toBe(69);
    });
  });
}
