import { describe, expect, it } from "vitest";
import { routeConfig } from "./route-config.js";
import { parseConfig } from "../../../src/config/config.js";
import { parseGatewayConfig } from "../../../src/gateway/config.js";
import { DEFAULT_READ_LIMITS } from "../../../src/gateway/counting.js";
import { statusMatches } from "../../../src/http/counting.js";

// A route's `count` and `cost` (docs/counting.md): what the parser makes of them, and the
// error naming the field for each bad value (`spillway check` and `serve` exit 2 with it).
const policies = [
  { name: "per-minute", algorithm: "gcra", limit: 60, period: "1m" },
  { name: "slots", algorithm: "concurrency", limit: 2 },
];
const route = { match: { path: "/login" }, key: "ip", policies: ["per-minute"] };
const { load, errorOf } = routeConfig(policies, route);

describe("route count and cost", () => {
  it("a plain route counts one unit before forwarding", () => {
    expect(load({}).counting).toBeUndefined();
  });

  it("count: status codes and classes, debited after the answer", () => {
    const counting = load({ count: { status: [401, 403, "5xx"] } }).counting!;
    expect(counting.afterAnswer).toBe(true);
    expect(counting.cost).toEqual({ from: "constant", cost: 1 });
    expect([200, 401, 403, 404, 500, 503].map((status) => statusMatches(counting.count!, status))).toEqual([false, true, true, false, true, true]);
  });

  it("costs known before forwarding are checked before forwarding", () => {
    expect(load({ cost: 5 }).counting).toEqual({ cost: { from: "constant", cost: 5 }, afterAnswer: false, read: DEFAULT_READ_LIMITS });
    // A cost the client states: absent, it is one request.
    expect(load({ cost: { requestHeader: "X-Cost", max: 50 } }).counting).toEqual({ cost: { from: "requestHeader", name: "x-cost", bounds: { max: 50, missing: 1 } }, afterAnswer: false, read: DEFAULT_READ_LIMITS });
  });

  it("costs the answer reports are debited after it, with max and missing", () => {
    expect(load({ cost: { responseHeader: "x-usage-tokens", missing: 0 } }).counting).toEqual({ cost: { from: "responseHeader", name: "x-usage-tokens", bounds: { missing: 0 } }, afterAnswer: true, read: DEFAULT_READ_LIMITS });
    expect(load({ cost: { responseJson: "usage.total_tokens", max: 100000, missing: 500 } }).counting).toMatchObject({ cost: { from: "responseJson", path: ["usage", "total_tokens"], bounds: { max: 100000, missing: 500 } }, afterAnswer: true });
    // count and a response cost: only the counted statuses are debited, by what they report.
    expect(load({ count: { status: ["2xx"] }, cost: { responseJson: "usage.total_tokens" } }).counting!.afterAnswer).toBe(true);
  });

  it("what the origin reports and cannot be read costs `max` by default, else the key's whole window: a client gains nothing by hiding it", () => {
    expect(load({ cost: { responseJson: "usage.total_tokens", max: 8000 } }).counting!.cost).toMatchObject({ bounds: { max: 8000, missing: 8000 } });
    // per-minute is gcra 60/min: its whole burst, refused until it refills, no debt of years.
    expect(load({ cost: { responseJson: "usage.total_tokens" } }).counting!.cost).toMatchObject({ bounds: { missing: 60 } });
    expect(load({ cost: { responseHeader: "x-usage", max: 70 } }).counting!.cost).toMatchObject({ bounds: { max: 70, missing: 70 } });
    expect(load({ cost: { responseHeader: "x-usage" } }).counting!.cost).toMatchObject({ bounds: { missing: 60 } });
    // The largest rate policy of a stack; a concurrency policy holds leases and counts nothing.
    const stacked = { ...route, policies: ["per-minute", "per-day", "slots"], cost: { responseJson: "usage.total_tokens" } };
    const config = parseConfig({ origin: "https://api.example.com", policies: [...policies, { name: "per-day", algorithm: "fixed-window", limit: 5000, period: "1d" }], routes: [stacked] });
    expect(parseGatewayConfig(config)!.routes[0]!.counting!.cost).toMatchObject({ bounds: { missing: 5000 } });
  });

  it("maxReadBytes and maxReadMs bound the read of a responseJson answer; every other counted route has the defaults", () => {
    expect(DEFAULT_READ_LIMITS).toEqual({ bytes: 8 * 1024 * 1024, ms: 120_000 });
    expect(load({ cost: { responseJson: "usage.total_tokens", maxReadBytes: 65536, maxReadMs: 5000 } }).counting!.read).toEqual({ bytes: 65536, ms: 5000 });
    expect(load({ cost: { responseJson: "usage.total_tokens", maxReadMs: 5000 } }).counting!.read).toEqual({ bytes: DEFAULT_READ_LIMITS.bytes, ms: 5000 });
    expect(load({ count: { status: [401] } }).counting!.read).toEqual(DEFAULT_READ_LIMITS);
  });

  it("concurrency policies may sit in a counted route's stack", () => {
    expect(load({ policies: ["per-minute", "slots"], count: { status: [401] } }).counting!.afterAnswer).toBe(true);
  });

  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["count that is not an object", { count: [401] }, /^routes\.0\.count: must be an object like \{ "status": \[401, 403\] \}, got \[401\]/],
    ["count without status", { count: {} }, /^routes\.0\.count\.status: is required/],
    ["a misspelled count field", { count: { statuses: [401] } }, /^routes\.0\.count\.statuses: is not a known field/],
    ["an empty status list", { count: { status: [] } }, /^routes\.0\.count\.status: must name at least one status/],
    ["a status below 100", { count: { status: [401, 99] } }, /^routes\.0\.count\.status\.1: must be a status code from 100 to 599 or a class "1xx" to "5xx", got 99/],
    ["a status class 6xx", { count: { status: ["6xx"] } }, /^routes\.0\.count\.status\.0: .*got "6xx"/],
    ["a status as a string", { count: { status: ["401"] } }, /^routes\.0\.count\.status\.0: .*got "401"/],
    ["a negative cost", { cost: -1 }, /^routes\.0\.cost: must be an integer from 0 to 1000000000, or an object .*got -1/],
    ["a fractional cost", { cost: 1.5 }, /^routes\.0\.cost: .*got 1\.5/],
    ["a cost above 1e9", { cost: 1e10 }, /^routes\.0\.cost: .*got 10000000000/],
    ["maxReadBytes below 1 KiB", { cost: { responseJson: "usage.total_tokens", maxReadBytes: 100 } }, /^routes\.0\.cost\.maxReadBytes: must be an integer from 1024 to 1073741824, got 100/],
    ["maxReadBytes as a string", { cost: { responseJson: "usage.total_tokens", maxReadBytes: "8MiB" } }, /^routes\.0\.cost\.maxReadBytes: must be an integer from 1024 to 1073741824, got "8MiB"/],
    ["maxReadMs above 10 minutes", { cost: { responseJson: "usage.total_tokens", maxReadMs: 600_001 } }, /^routes\.0\.cost\.maxReadMs: must be an integer from 1000 to 600000, got 600001/],
    ["maxReadMs fractional", { cost: { responseJson: "usage.total_tokens", maxReadMs: 1500.5 } }, /^routes\.0\.cost\.maxReadMs: .*got 1500\.5/],
    ["maxReadBytes on a header cost", { cost: { responseHeader: "x-usage", maxReadBytes: 4096 } }, /^routes\.0\.cost\.maxReadBytes: is for a "responseJson" cost/],
    ["a cost as a string", { cost: "5" }, /^routes\.0\.cost: .*got "5"/],
    ["a cost naming no source", { cost: { max: 5 } }, /^routes\.0\.cost: must name exactly one of "requestHeader", "responseHeader" or "responseJson", got none/],
    ["a cost naming two sources", { cost: { requestHeader: "x-a", responseHeader: "x-b" } }, /^routes\.0\.cost: .*got requestHeader and responseHeader/],
    ["an unknown cost field", { cost: { responseBody: "usage" } }, /^routes\.0\.cost\.responseBody: is not a known field/],
    ["a responseJson path with an empty segment", { cost: { responseJson: "usage..tokens" } }, /^routes\.0\.cost\.responseJson: must be a dotted path .*got "usage\.\.tokens"/],
    ["a responseJson that is not a string", { cost: { responseJson: ["usage"] } }, /^routes\.0\.cost\.responseJson: must be a string, got \["usage"\]/],
    ["a header name with a space", { cost: { responseHeader: "x usage" } }, /^routes\.0\.cost\.responseHeader: must be a header name/],
    ["a negative max", { cost: { responseHeader: "x-usage", max: -1 } }, /^routes\.0\.cost\.max: must be an integer from 0 to 1000000000, got -1/],
    ["a fractional missing", { cost: { responseHeader: "x-usage", missing: 0.5 } }, /^routes\.0\.cost\.missing: .*got 0\.5/],
    ["missing above max", { cost: { responseHeader: "x-usage", max: 10, missing: 20 } }, /^routes\.0\.cost\.missing: must not be above max \(10\), got 20/],
    ["count with delay", { count: { status: [401] }, onLimit: "delay", maxDelayMs: 100 }, /^routes\.0\.onLimit: must be "reject" when answers are counted \(routes\.0\.count\)/],
    ["a response cost with delay", { cost: { responseJson: "usage.total_tokens" }, onLimit: "delay", maxDelayMs: 100 }, /^routes\.0\.onLimit: .*\(routes\.0\.cost\)/],
    ["count on concurrency alone", { policies: ["slots"], count: { status: [401] } }, /^routes\.0\.count: counts nothing/],
  ];
  it.each(cases)("refuses %s, naming the field", (_label, fields, message) => {
    expect(errorOf(fields)).toMatch(message);
  });
});
