import { describe, expect, it } from "vitest";
import { routeConfig } from "./route-config.js";
import { BodyFieldsReader, noBodyFields } from "../../../src/gateway/body-fields.js";
import { type UsageCost, chargesOf, pricedByRequest, reservationsOf } from "../../../src/gateway/measures.js";

// The request's model prices a microdollars route that reads its body (docs/counting.md,
// "Prices"): the reservation, and an answer that names no model; the answer's own model wins.
const policies = [
  { name: "tokens", algorithm: "token-bucket", limit: 100_000, period: "1m" },
  { name: "usd", algorithm: "fixed-window", limit: 50_000_000_000_000, calendar: "month" },
];
const prices = { "gpt-4o": { input: 2.5, output: 10 }, "gpt-4o-mini": { input: 0.15, output: 0.6 }, "o1": { input: 15, output: 60 } };
const cost = { usage: "openai", measures: { tokens: "total", usd: "microdollars" }, prices, max: 8000 };
const route = { match: { path: "/v1/chat/completions" }, key: "header:x-user", policies: ["tokens", "usd"], cost };
const { load } = routeConfig(policies, route);

/** The fields a route reads of `body`, as an edge reads them. */
function bodyOf(paths: readonly (readonly string[])[], body: string) {
  const reader = new BodyFieldsReader({ paths, limitBytes: 1 << 20 });
  reader.push(new TextEncoder().encode(body));
  return reader.finish(true);
}

describe("the request's model for prices", () => {
  it("a route that reads its body (an estimate from it, a json: key) reads its model too; one that reads none holds no body for it", () => {
    expect(load({ estimate: { input: 1000, output: { requestJson: "max_tokens" } } }).bodyRead?.paths).toEqual([["max_tokens"], ["model"]]);
    expect(load({ key: "json:user" }).bodyRead?.paths).toEqual([["user"], ["model"]]);
    expect(load({ estimate: { requestJson: "max_tokens" } }).bodyRead?.paths).toEqual([["max_tokens"], ["model"]]);
    expect(load({ key: "json:model" }).bodyRead?.paths).toEqual([["model"]]);
    expect(load({}).bodyRead).toBeUndefined();
    expect(load({ estimate: 500 }).bodyRead).toBeUndefined();
    // Without prices the model is not read.
    expect(load({ key: "json:user", cost: { usage: "openai", measure: "total" } }).bodyRead?.paths).toEqual([["user"]]);
  });

  const usage = load({ estimate: { input: 1000, output: { requestJson: "max_tokens" } } });
  const routeCost = usage.counting!.cost as UsageCost;
  const read = (body: string) => pricedByRequest(routeCost, bodyOf(usage.bodyRead!.paths, body));

  it("reserves at the request's model: exact, without a date suffix, else the dearest (no default)", () => {
    const estimate = { input: 1000, output: 500 };
    expect(reservationsOf(estimate, read('{"model":"gpt-4o-mini","max_tokens":500}')).microdollars).toBe(1000 * 0.15 + 500 * 0.6);
    expect(reservationsOf(estimate, read('{"model":"gpt-4o-2024-08-06","max_tokens":500}')).microdollars).toBe(1000 * 2.5 + 500 * 10);
    // One number of tokens: each at the dearer of the model's two prices.
    expect(reservationsOf(1500, read('{"model":"gpt-4o-mini"}')).microdollars).toBe(1500 * 0.6);
    const dearest = 1000 * 15 + 500 * 60;
    expect(reservationsOf(estimate, read('{"model":"gpt-5","max_tokens":500}')).microdollars).toBe(dearest);
    // No model, a model that is not a string, one named twice, a body not read: the dearest, as before.
    for (const body of ['{"max_tokens":500}', '{"model":7}', '{"model":"gpt-4o-mini","model":"o1"}', "not json"]) expect(reservationsOf(estimate, read(body)).microdollars).toBe(dearest);
    expect(reservationsOf(estimate, pricedByRequest(routeCost, noBodyFields("not read"))).microdollars).toBe(dearest);
    expect(reservationsOf(estimate, pricedByRequest(routeCost, undefined)).microdollars).toBe(dearest);
    expect(pricedByRequest(routeCost, undefined)).toBe(routeCost);
  });

  it("a default prices a request model the table does not name", () => {
    const withDefault = load({ key: "json:user", cost: { ...cost, prices: { ...prices, default: { input: 1, output: 2 } } } });
    const priced = pricedByRequest(withDefault.counting!.cost as UsageCost, bodyOf(withDefault.bodyRead!.paths, '{"user":"u","model":"gpt-5"}'));
    expect(priced.requestModel).toBe("gpt-5");
    expect(reservationsOf({ input: 1000, output: 500 }, priced).microdollars).toBe(1000 + 1000);
  });

  it("an answer naming no model is priced by the request's; the answer's own model wins when both are there", () => {
    const mini = read('{"model":"gpt-4o-mini"}');
    expect(chargesOf({ input: 1000, output: 500 }, mini, false)).toEqual({ charges: { input: 1000, output: 500, total: 1500, requests: 1, microdollars: 450 } });
    expect(chargesOf({ input: 1000, output: 500, model: "gpt-4o-2024-08-06" }, mini, false).charges.microdollars).toBe(7500);
    // The answer names a model the table does not: the dearest (logged), not the request's.
    const unknown = chargesOf({ input: 1000, output: 500, model: "gpt-5" }, mini, false);
    expect(unknown.charges.microdollars).toBe(45_000);
    expect(unknown.unread).toContain('"gpt-5": charged the dearest prices');
    // A request model the table does not name, and no answer model: the dearest, logged by the request's name.
    const stranger = chargesOf({ input: 1000, output: 500 }, read('{"model":"gpt-5"}'), false);
    expect(stranger.charges.microdollars).toBe(45_000);
    expect(stranger.unread).toContain('"gpt-5": charged the dearest prices');
    // Without the request's model (the route's cost itself): the dearest, as before.
    expect(chargesOf({ input: 1000, output: 500 }, routeCost, false).charges.microdollars).toBe(45_000);
  });
});
