import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpLimiter } from "../../../../src/client/index.js";
import { parseConfig } from "../../../../src/config/config.js";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

// POST /v1/credits on the real Node server (README "HTTP API"), and the balance it changes as
// /v1/check spends it; a key's override of `limit` is where its balance starts.
const config = parseConfig({
  policies: [
    { name: "prepaid", algorithm: "credits", limit: 100 },
    { name: "plan", algorithm: "credits", limit: 1000, refill: { calendar: "month", timezone: "Europe/Paris" } },
    { name: "monthly", algorithm: "fixed-window", limit: 10, calendar: "month", timezone: "America/New_York" },
    { name: "per-minute", algorithm: "gcra", limit: 60, period: "1m" },
  ],
  overrides: [{ policy: "prepaid", key: "acme", limit: 5000 }],
});

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ config, limiter: new MemoryStore(), port: 0, token: "secret" });
});
afterAll(() => server.close());

const post = (route: string, body: unknown) =>
  fetch(`${server.url}/v1/${route}`, { method: "POST", headers: { authorization: "Bearer secret", "content-type": "application/json" }, body: JSON.stringify(body) });
const answer = async (route: string, body: unknown) => {
  const response = await post(route, body);
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
};

describe("POST /v1/credits", () => {
  it("tops up and sets a balance that checks spend, all-or-nothing, never below zero", async () => {
    expect(await answer("credits", { key: "alice", policy: "prepaid", add: 50 })).toMatchObject({ status: 200, body: { key: "alice", policy: "prepaid", remaining: 150 } });
    expect(await answer("check", { key: "alice", policy: "prepaid", cost: 140 })).toMatchObject({ status: 200, body: { allowed: true, remaining: 10, limit: 100 } });
    const refused = await answer("check", { key: "alice", policy: "prepaid", cost: 11 });
    // Only a top-up can help: no time fixes it, so no Retry-After.
    expect(refused).toMatchObject({ status: 429, body: { allowed: false, remaining: 10, retryAfterMs: null } });
    expect(refused.headers.get("retry-after")).toBeNull();
    expect(refused.headers.get("ratelimit-policy")).toBe('"prepaid";q=100');
    expect(refused.body.detail).toBe('the cost 11 exceeds the credits balance of policy "prepaid" (10 left): no wait helps; a top-up (POST /v1/credits) or the balance\'s refill does');
    expect(await answer("credits", { key: "alice", policy: "prepaid", set: 11 })).toMatchObject({ body: { remaining: 11 } });
    expect(await answer("check", { key: "alice", policy: "prepaid", cost: 11 })).toMatchObject({ status: 200, body: { remaining: 0 } });
    // A debit may take it below zero (tokens already used); a top-up repays the debt first.
    expect(await answer("check", { key: "alice", policy: "prepaid", cost: 5, mode: "debit" })).toMatchObject({ status: 200, body: { remaining: 0 } });
    expect(await answer("credits", { key: "alice", policy: "prepaid", add: 7 })).toMatchObject({ body: { remaining: 2 } });
  });

  it("stacks with a rate policy: a refusal by either spends nothing", async () => {
    for (let i = 0; i < 60; i++) await post("check", { key: "bob", policy: ["prepaid", "per-minute"] });
    const denied = await answer("check", { key: "bob", policy: ["prepaid", "per-minute"] });
    expect(denied).toMatchObject({ status: 429, body: { policy: "per-minute" } });
    expect(await answer("peek", { key: "bob", policy: "prepaid" })).toMatchObject({ body: { remaining: 40 } });
  });

  it("a key's override of limit is where its balance starts", async () => {
    expect(await answer("credits", { key: "acme", policy: "prepaid", add: 0 })).toMatchObject({ body: { remaining: 5000 } });
    expect(await answer("check", { key: "acme", policy: "prepaid", cost: 4000 })).toMatchObject({ body: { allowed: true, remaining: 1000, limit: 5000 } });
  });

  it("a refilled balance and a calendar window answer to their boundary", async () => {
    const sentMs = Date.now();
    const { body } = await answer("check", { key: "carol", policy: "plan", cost: 10 });
    // Read with Intl here: the wall clock in Paris where resetMs ends is the 1st at 00:00, and a few seconds before, still the previous month.
    const wall = (atMs: number) => new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Paris", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(atMs);
    const boundaryMs = sentMs + (body.resetMs as number);
    expect([wall(boundaryMs), wall(boundaryMs + 1000), wall(boundaryMs + 2000)]).toContain("01, 00:00");
    expect(wall(boundaryMs - 5000).startsWith("01,")).toBe(false);
    const monthly = await answer("check", { key: "carol", policy: "monthly" });
    expect(monthly.headers.get("ratelimit-policy")).toBe('"monthly";q=10');
    expect(monthly.headers.get("ratelimit")).toBe(`"monthly";r=9;t=${Math.ceil((monthly.body.resetMs as number) / 1000)}`);
  });

  it("the HTTP client's credits()", async () => {
    const limiter = httpLimiter({ url: server.url, token: "secret" });
    expect(await limiter.credits("dave", "prepaid", { add: 1 })).toEqual({ remaining: 101 });
    expect(await limiter.credits("dave", { name: "inline", algorithm: "credits", limit: 3 }, { set: 2 })).toEqual({ remaining: 2 });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ["a negative add", { add: -1 }, "add"],
    ["a fractional add", { add: 1.5 }, "add"],
    ["an add above 1e15", { add: 1e15 + 1 }, "add"],
    ["an add as text", { add: "5" }, "add"],
    ["a negative set", { set: -3 }, "set"],
    ["neither add nor set", {}, "add"],
    ["both add and set", { add: 1, set: 1 }, "set"],
    ["a policy that is not credits", { policy: "per-minute", add: 1 }, "policy"],
    ["a stack", { policy: ["prepaid"], add: 1 }, "policy"],
    ["an inline policy with a bad zone", { policy: { name: "x", algorithm: "credits", limit: 1, refill: { calendar: "day", timezone: "Nowhere" } }, add: 1 }, "policy.refill.timezone"],
    ["an unknown field", { add: 1, amount: 1 }, "amount"],
  ])("%s: 400 naming %s", async (_label, change, field) => {
    const { status, body } = await answer("credits", { key: "erin", policy: "prepaid", ...change });
    expect(status).toBe(400);
    expect(body.field).toBe(field);
    expect(String(body.detail).startsWith(`${field}:`)).toBe(true);
  });

  it("an unknown policy is a 404, a wrong method a 405", async () => {
    expect((await answer("credits", { key: "erin", policy: "nope", add: 1 })).status).toBe(404);
    expect((await fetch(`${server.url}/v1/credits`, { headers: { authorization: "Bearer secret" } })).status).toBe(405);
  });
});
