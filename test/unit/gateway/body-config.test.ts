import { describe, expect, it } from "vitest";
import { routeConfig } from "./route-config.js";
import { parseConfig } from "../../../src/config/config.js";
import { parseGatewayConfig } from "../../../src/gateway/config.js";
import { parseKeySource } from "../../../src/gateway/keys.js";
import { apiStoreKey } from "../../../src/overrides/key-source.js";
import { routeSourcesOf } from "../../../src/overrides/route-sources.js";

// What a route reads of the request body (docs/counting.md, "Fields of the request body"): a
// requestJson estimate, json: keys, policiesBy and maxRequestReadBytes, as the parser makes
// them, and the error naming the field for each bad value.
const policies = [
  { name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" },
  { name: "gpt4o", algorithm: "token-bucket", limit: 30_000, period: "1m" },
  { name: "rpm", algorithm: "fixed-window", limit: 100, period: "1m" },
];
const cost = { responseJson: "usage.total_tokens", max: 8000 };
const route = { match: { path: "/v1/chat/completions" }, key: "header:authorization", policies: ["tokens"] };
const { load, errorOf } = routeConfig(policies, route);

describe("a route's body read", () => {
  it("a requestJson estimate: its paths, 0.25 tokens a byte by default, the cost's missing; the route reads those paths within 1 MiB", () => {
    const parsed = load({ cost, estimate: { requestJson: ["max_tokens", "max_completion_tokens"] } });
    expect(parsed.counting?.estimate).toEqual({ from: "requestJson", paths: [["max_tokens"], ["max_completion_tokens"]], promptTokensPerByte: 0.25, bounds: { max: 8000, missing: 8000 } });
    expect(parsed.bodyRead).toEqual({ paths: [["max_tokens"], ["max_completion_tokens"]], limitBytes: 1024 * 1024 });
    expect(load({ cost, estimate: { requestJson: "generation.max", promptTokensPerByte: 0, missing: 100 } }).counting?.estimate).toEqual({ from: "requestJson", paths: [["generation", "max"]], promptTokensPerByte: 0, bounds: { max: 8000, missing: 100 } });
    expect(load({}).bodyRead).toBeUndefined();
  });

  it("json: keys, composite or fallback, and policiesBy add their paths (once each); maxRequestReadBytes bounds the read", () => {
    expect(parseKeySource("json:metadata.user_id")).toEqual({ kind: "json", path: ["metadata", "user_id"] });
    const parsed = load({ key: ["header:x-org", "json:user"], fallbackKey: "json:metadata.user_id", policiesBy: { json: "user", policies: { a: ["rpm"] } }, maxRequestReadBytes: 4096 });
    expect(parsed.bodyRead).toEqual({ paths: [["user"], ["metadata", "user_id"]], limitBytes: 4096 });
  });

  it("policiesBy: each value's stack is the route's policies and its own; default, else the route's alone", () => {
    const parsed = load({ policies: ["rpm"], policiesBy: { json: "model", policies: { "gpt-4o": ["gpt4o"] }, default: ["tokens"] } });
    expect(parsed.policiesBy!.stacks.get("gpt-4o")!.map((policy) => policy.name)).toEqual(["rpm", "gpt4o"]);
    expect(parsed.policiesBy!.fallback.map((policy) => policy.name)).toEqual(["rpm", "tokens"]);
    const noDefault = load({ policies: ["rpm"], policiesBy: { json: "model", policies: { "gpt-4o": "gpt4o" } } });
    expect(noDefault.policiesBy!.fallback.map((policy) => policy.name)).toEqual(["rpm"]);
    const noOwn = { match: { path: "/x" }, key: "ip", policiesBy: { json: "model", policies: { m: ["gpt4o"] }, default: ["tokens"] } };
    expect(parseGatewayConfig(parseConfig({ origin: "https://api.example.com", policies, routes: [noOwn] }))!.routes[0]!.policies).toEqual([]);
  });

  it.each([
    [{ cost, estimate: { requestJson: [] } }, /^routes\.0\.estimate\.requestJson: must be a dotted path or a list of 1 to 8/],
    [{ cost, estimate: { requestJson: 5 } }, /^routes\.0\.estimate\.requestJson: must be a dotted path or a list/],
    [{ cost, estimate: { requestJson: ["max_tokens", 3] } }, /^routes\.0\.estimate\.requestJson\.1: must be a dotted path like "max_tokens", got 3/],
    [{ cost, estimate: { requestJson: ["usage..x"] } }, /^routes\.0\.estimate\.requestJson\.0: must be a dotted path of up to 16 names/],
    [{ cost, estimate: { requestJson: ["a", "a"] } }, /^routes\.0\.estimate\.requestJson: names one path twice/],
    [{ cost, estimate: { requestJson: "max_tokens", requestHeader: "x-max" } }, /^routes\.0\.estimate: must name exactly one of "requestHeader" or "requestJson", got both/],
    [{ cost, estimate: { requestJson: "max_tokens", promptTokensPerByte: -0.1 } }, /^routes\.0\.estimate\.promptTokensPerByte: must be a number from 0 to 1/],
    [{ cost, estimate: { requestJson: "max_tokens", promptTokensPerByte: "0.25" } }, /^routes\.0\.estimate\.promptTokensPerByte: must be a number/],
    [{ cost, estimate: { requestJson: "max_tokens", promptTokensPerByte: 2 } }, /^routes\.0\.estimate\.promptTokensPerByte: must be a number from 0 to 1/],
    [{ cost, estimate: { requestHeader: "x-max", promptTokensPerByte: 0.2 } }, /^routes\.0\.estimate\.promptTokensPerByte: is for a "requestJson" estimate/],
    [{ cost, estimate: { requestJson: "max_tokens", missing: 9000 } }, /^routes\.0\.estimate\.missing: must not be above the cost's max/],
    [{ estimate: { requestJson: "max_tokens" } }, /^routes\.0\.estimate: is for a route whose cost the answer reports/],
    [{ key: "json:" }, /^routes\.0\.key: needs a field's dotted path after "json:"/],
    [{ key: ["ip", "json:a..b"] }, /^routes\.0\.key: part 1: needs a field's dotted path after "json:"/],
    [{ key: "json:user", maxRequestReadBytes: 10 }, /^routes\.0\.maxRequestReadBytes: must be an integer from 1024 to 67108864, got 10/],
    [{ maxRequestReadBytes: 4096 }, /^routes\.0\.maxRequestReadBytes: is for a route that reads its request body/],
    [{ policiesBy: "model" }, /^routes\.0\.policiesBy: must be an object like/],
    [{ policiesBy: { json: "model", policies: {}, extra: 1 } }, /^routes\.0\.policiesBy\.extra: is not a known field/],
    [{ policiesBy: { json: 3, policies: { a: ["rpm"] } } }, /^routes\.0\.policiesBy\.json: must be the dotted path of a body field/],
    [{ policiesBy: { json: "model", policies: {} } }, /^routes\.0\.policiesBy\.policies: must list from 1 to 256 values, got 0/],
    [{ policiesBy: { json: "model", policies: { "gpt-4o": ["nope"] } } }, /^routes\.0\.policiesBy\.policies\.gpt-4o\.0: /],
    [{ policiesBy: { json: "model", policies: { "gpt-4o": ["tokens"] } } }, /^routes\.0\.policiesBy\.policies\.gpt-4o\.0: names "tokens", which the route's own policies already stack/],
    [{ policies: undefined, policiesBy: { json: "model", policies: { a: ["rpm"] } } }, /^routes\.0\.policiesBy\.default: is required when the route has no policies of its own/],
    [{ policies: undefined }, /^routes\.0\.policies: is required/],
  ])("refuses %j naming the field", (fields, message) => {
    expect(errorOf(fields)).toMatch(message);
  });

  it("a policy policiesBy picks counts under the route's key: credits and overrides may name that source", () => {
    const config = parseConfig({ origin: "https://api.example.com", policies, routes: [{ match: { path: "/x" }, key: "json:user", policiesBy: { json: "model", policies: { m: ["gpt4o"] }, default: "tokens" } }] });
    const sources = routeSourcesOf(config.gateway!.routes, config.catalog);
    expect([...sources.get("gpt4o")!.keys()]).toEqual(["json:user"]);
    expect([...sources.get("tokens")!.keys()]).toEqual(["json:user"]);
  });

  it("a /v1 key spelled like a json: route's store key is kept apart (v1:)", () => {
    expect(apiStoreKey("json:user:victim")).toBe("v1:json:user:victim");
    expect(apiStoreKey("jsonish")).toBe("jsonish");
  });
});
