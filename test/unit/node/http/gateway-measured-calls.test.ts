import { readFileSync } from "node:fs";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Limiter } from "../../../../src/core/limiter.js";
import type { DebitCost } from "../../../../src/core/types.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { DEAREST, POLICIES, POLICY_INPUTS, PRICES, microdollars, providerRoutes } from "../../../fixtures/llm/provider-config.js";
import { type GatewayUnderTest, type Running, request, startGateway, startOrigin, waitFor } from "./gateway-helpers.js";

// A route whose policies each count their own measure (issue 42) decides a request in one store
// call, with an estimate and without: every rate policy at its own cost, all-or-nothing in the
// store; a refused request consumed nothing, so nothing is given back; the answer settles every
// measure in one debit. The store under the gateway counts its calls.
const answer = readFileSync(new URL("../../../fixtures/llm/openai-chat.json", import.meta.url));

interface Call {
  op: "check" | "peek" | "debit";
  costs?: unknown;
}
const calls: Call[] = [];
const memory = new MemoryStore();
/** The memory store, counting the calls the gateway makes (a store of the caller's own: no debitNow). */
const counting: Limiter = {
  kind: "own",
  check: (key, policies, options) => (calls.push({ op: "check", costs: options.costs }), memory.check(key, policies, options)),
  peek: (key, policies) => (calls.push({ op: "peek" }), memory.peek(key, policies)),
  debit: (key, policies, cost: DebitCost, spentAtMs) => (calls.push({ op: "debit", costs: cost }), memory.debit(key, policies, cost, spentAtMs)),
  acquire: (key, policies, options) => memory.acquire(key, policies, options),
  release: (key, policies, leaseId) => memory.release(key, policies, leaseId),
  extend: (key, policies, leaseId, leaseMs) => memory.extend(key, policies, leaseId, leaseMs),
  reset: (key, policies) => memory.reset(key, policies),
  credits: (key, policy, change) => memory.credits(key, policy, change),
  health: () => memory.health(),
};

let origin: Running;
let gateway: GatewayUnderTest;
beforeAll(async () => {
  origin = await startOrigin((_req, res) => void res.writeHead(200, { "content-type": "application/json" }).end(answer));
  gateway = await startGateway({ origin: origin.url, policies: POLICY_INPUTS, routes: providerRoutes }, counting);
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
  await memory.close();
});
beforeEach(() => {
  calls.length = 0;
});

let users = 0;
const newUser = () => `measured-${++users}-${Date.now()}`;
const post = (path: string, user: string) => request(`${gateway.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-user": user }, body: '{"model":"gpt-4.1","max_tokens":500}' });
async function spent(user: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const policy of POLICIES) out[policy.name] = policy.limit - (await memory.peek(`header:x-user:${user}`, [policy])).remaining;
  return out;
}
/** What the answer (openai-chat.json: 19 in, 10 out, gpt-4.1) charges each policy, times n. */
const settledOf = (n: number) => ({ itpm: n * 19, otpm: n * 10, tpm: n * 29, rpm: n, usd: n * microdollars(19, 10, PRICES["gpt-4.1"]) });

describe("a route of several measures: one store call per request", () => {
  it("without an estimate: one check per request (requests charged 1, every other policy peeked), one debit per answer", async () => {
    const user = newUser();
    for (let i = 0; i < 4; i++) expect((await post("/openai/x", user)).status).toBe(200);
    await waitFor(() => calls.filter((call) => call.op === "debit").length === 4);
    // Stack order: itpm, otpm, tpm, rpm, usd.
    expect(calls.filter((call) => call.op !== "debit")).toEqual(Array.from({ length: 4 }, () => ({ op: "check", costs: [0, 0, 0, 1, 0] })));
    expect(calls.filter((call) => call.op === "debit").map((call) => call.costs)).toEqual(Array.from({ length: 4 }, () => [19, 10, 29, 0, microdollars(19, 10, PRICES["gpt-4.1"])]));
    expect(await spent(user)).toEqual(settledOf(4));
  });

  it("with an estimate: one check reserving every measure, one debit settling them all", async () => {
    const user = newUser();
    for (let i = 0; i < 3; i++) expect((await post("/reserved/x", user)).status).toBe(200);
    await waitFor(() => calls.filter((call) => call.op === "debit").length === 3);
    const reserved = [2000, 500, 2500, 1, microdollars(2000, 500, DEAREST)];
    expect(calls.filter((call) => call.op !== "debit")).toEqual(Array.from({ length: 3 }, () => ({ op: "check", costs: reserved })));
    // Settled: the answer's usage less each reservation (a refund where the estimate was high).
    expect(calls.find((call) => call.op === "debit")!.costs).toEqual([19 - 2000, 10 - 500, 29 - 2500, 0, microdollars(19, 10, PRICES["gpt-4.1"]) - reserved[4]!]);
    await waitFor(async () => JSON.stringify(await spent(user)) === JSON.stringify(settledOf(3)));
  });

  it("refused by one measure: one call, nothing consumed from the others, nothing given back", async () => {
    const user = newUser();
    // Input tokens spent to 1,500: a reservation of 2,000 does not fit.
    await memory.debit(`header:x-user:${user}`, [POLICIES[0]!], 8500);
    calls.length = 0;
    const refused = await post("/reserved/x", user);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body.toString())["violated-policies"]).toEqual(["itpm"]);
    expect(calls).toEqual([{ op: "check", costs: [2000, 500, 2500, 1, microdollars(2000, 500, DEAREST)] }]);
    expect(await spent(user)).toEqual({ itpm: 8500, otpm: 0, tpm: 0, rpm: 0, usd: 0 });
  });
});
