import { describe, expect, it } from "vitest";
import { routeConfig } from "./route-config.js";

// A route's `estimate` (docs/counting.md, "Reserve, then settle"): what the parser makes of it,
// and the error naming the field for each bad value.
const policies = [{ name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" }];
const cost = { responseJson: "usage.total_tokens", max: 8000 };
const route = { match: { path: "/v1/chat/completions" }, key: "header:authorization", policies: ["tokens"] };
const { load, errorOf } = routeConfig(policies, route);

describe("route estimate", () => {
  it("a constant, or a request header whose missing defaults to the cost's missing", () => {
    expect(load({ cost, estimate: 2000 }).counting?.estimate).toEqual({ from: "constant", cost: 2000 });
    expect(load({ cost, estimate: { requestHeader: "X-Max-Tokens" } }).counting?.estimate).toEqual({ from: "requestHeader", name: "x-max-tokens", bounds: { max: 8000, missing: 8000 } });
    expect(load({ cost: { responseHeader: "x-usage" }, estimate: { requestHeader: "x-max-tokens", missing: 4096 } }).counting?.estimate).toEqual({ from: "requestHeader", name: "x-max-tokens", bounds: { missing: 4096 } });
    expect(load({ cost }).counting?.estimate).toBeUndefined();
  });

  it.each([
    [{ estimate: 2000 }, /^routes\.0\.estimate: is for a route whose cost the answer reports/],
    [{ cost: 5, estimate: 2000 }, /^routes\.0\.estimate: is for a route whose cost the answer reports/],
    [{ cost: { requestHeader: "x-cost" }, estimate: 2000 }, /^routes\.0\.estimate: is for a route whose cost the answer reports/],
    [{ cost, estimate: -1 }, /^routes\.0\.estimate: must be an integer from 0 to 1000000000, \{ "requestHeader"/],
    [{ cost, estimate: 1.5 }, /^routes\.0\.estimate: must be an integer/],
    [{ cost, estimate: "2000" }, /^routes\.0\.estimate: must be an integer/],
    [{ cost, estimate: 9000 }, /^routes\.0\.estimate: must not be above the cost's max \(8000\)/],
    [{ cost, estimate: { requestHeader: "x max" } }, /^routes\.0\.estimate\.requestHeader: must be a header name like "x-max-tokens", got "x max"/],
    [{ cost, estimate: {} }, /^routes\.0\.estimate: must name exactly one of "requestHeader" or "requestJson", got none/],
    [{ cost, estimate: { requestHeader: "x-max-tokens", missing: 9000 } }, /^routes\.0\.estimate\.missing: must not be above the cost's max/],
    [{ cost, estimate: { requestHeader: "x-max-tokens", missing: -3 } }, /^routes\.0\.estimate\.missing: must be an integer from 0 to 1000000000/],
    [{ cost, estimate: { requestHeader: "x-max-tokens", max: 3 } }, /^routes\.0\.estimate\.max: is not a known field/],
  ])("refuses %j naming the field", (fields, message) => {
    expect(errorOf(fields)).toMatch(message);
  });
});
