import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../../../src/core/policy.js";
import type { KeyTable } from "../../../../src/stores/key-table.js";
import { type GatewayUnderTest, type Running, request, startGateway, startOrigin, waitFor } from "./gateway-helpers.js";

// A prepaid balance spent by the tokens an LLM origin reports (docs/counting.md, docs/limits.md
// "Credits"), topped up with POST /v1/credits on the same server, naming the route's key source
// (the route counts `header:x-user:<user>`).
const PREPAID = parsePolicy({ name: "prepaid", algorithm: "credits", limit: 1000 }, "policy");
const config = {
  policies: [{ name: "prepaid", algorithm: "credits", limit: 1000 }],
  routes: [{ match: { path: "/v1/chat/*" }, key: "header:x-user", policies: ["prepaid"], cost: { responseJson: "usage.total_tokens", missing: 7 } }],
  // A sourced override: the route's key "vip" starts at 5000; /v1/credits sees it with the same source.
  overrides: [{ policy: "prepaid", source: "header:x-user", key: "vip", limit: 5000 }],
};

let origin: Running;
let gateway: GatewayUnderTest;
beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    const tokens = Number(req.headers["x-tokens"]);
    // A little latency, so that a burst is in flight together.
    setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ usage: { total_tokens: tokens } })), 20);
  });
  gateway = await startGateway({ ...config, origin: origin.url });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});

const chat = (user: string, tokens: number) => request(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "x-user": user, "x-tokens": String(tokens) } });
const balance = async (user: string) => (await gateway.limiter.peek(`header:x-user:${user}`, [PREPAID])).remaining;
/** The balance as stored, debt included (a decision reports it floored at 0). */
const storedBalance = (user: string) => {
  const keys = (gateway.limiter as unknown as { keys: KeyTable }).keys;
  const stored = keys.get(`header:x-user:${user}`)?.local.state.states.get("prepaid");
  return stored?.algorithm === "credits" ? stored.state.balance : undefined;
};
const postCredits = (body: Record<string, unknown>) =>
  fetch(`${gateway.url}/v1/credits`, { method: "POST", headers: { authorization: "Bearer test-token", "content-type": "application/json" }, body: JSON.stringify({ policy: "prepaid", ...body }) });
const credits = async (user: string, change: Record<string, number>) => {
  const response = await postCredits({ key: user, source: "header:x-user", ...change });
  expect(response.status).toBe(200);
  return ((await response.json()) as { remaining: number }).remaining;
};

describe("Node gateway: a counted route spends a prepaid balance", () => {
  it("spends what the origin reports, refuses once it is spent (no Retry-After: only a top-up helps), and passes again after one", async () => {
    expect((await chat("alice", 600)).status).toBe(200);
    await waitFor(async () => (await balance("alice")) === 400);
    // The peek passes (400 left), and the answer's 600 take the balance below zero: the tokens were used.
    expect((await chat("alice", 600)).status).toBe(200);
    await waitFor(async () => (await balance("alice")) === 0);
    const refused = await chat("alice", 1);
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBeUndefined();
    expect(JSON.parse(refused.body.toString())).toMatchObject({ "violated-policies": ["prepaid"], detail: expect.stringContaining('the credits balance of policy "prepaid" (0 left)') });
    // The debt (-200) is repaid first.
    expect(await credits("alice", { add: 300 })).toBe(100);
    expect((await chat("alice", 50)).status).toBe(200);
    await waitFor(async () => (await balance("alice")) === 50);
  });

  it("a source's override applies to the balance its routes spend and to its top-ups; a bad source is a 400 naming it", async () => {
    expect(await credits("vip", { add: 0 })).toBe(5000);
    expect((await chat("vip", 4500)).status).toBe(200);
    await waitFor(() => storedBalance("vip") === 500);
    expect(await credits("vip", { add: 100 })).toBe(600);
    // Without the source it is another key (a /v1/check key) with the policy's own limit.
    expect(await (await postCredits({ key: "vip", add: 0 })).json()).toMatchObject({ remaining: 1000 });
    const bad = await postCredits({ key: "vip", source: "header:", add: 1 });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ field: "source" });
  });

  it("under a burst: every request in flight passed the peek (today's counted-route bound), every token is charged, and then it refuses", async () => {
    // 20 requests of 150 tokens against 1000: all pass the peek before any debit lands.
    const answers = await Promise.all(Array.from({ length: 20 }, () => chat("bob", 150)));
    const admitted = answers.filter((answer) => answer.status === 200).length;
    expect(admitted).toBeGreaterThanOrEqual(7);
    // Exactly what the admitted requests used is charged: 1000 - 150 × admitted, repaid to the unit.
    const debt = 150 * admitted - 1000;
    await waitFor(() => storedBalance("bob") === -debt);
    expect(await credits("bob", { add: debt })).toBe(0);
    expect(await credits("bob", { add: 1 })).toBe(1);
    expect((await chat("bob", 1)).status).toBe(200);
    await waitFor(async () => (await balance("bob")) === 0);
    expect((await chat("bob", 1)).status).toBe(429);
  });
});
