import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { ValidationError } from "../../../src/core/validation.js";
import { parseGatewayConfig } from "../../../src/gateway/config.js";
import { createNodeGateway } from "../../../src/node/http/gateway.js";
import { MemoryStore } from "../../../src/stores/memory.js";

const policies = [
  { name: "per-minute", algorithm: "gcra", limit: 60, period: "1m" },
  { name: "slots", algorithm: "concurrency", limit: 2 },
];
const route = { match: { path: "/api/*", methods: ["GET"] }, key: "ip", policies: ["per-minute"] };
const base = { origin: "https://api.example.com", policies, routes: [route] };

const load = (raw: Record<string, unknown>) => parseGatewayConfig(parseConfig(raw));
const withRoute = (fields: Record<string, unknown>) => ({ ...base, routes: [{ ...route, ...fields }] });

/** The ValidationError a config raises: its field and message. */
function errorOf(raw: Record<string, unknown>): { field: string; message: string } {
  try {
    load(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return { field: (error as ValidationError).field, message: (error as Error).message };
  }
  throw new Error("the config was accepted");
}

describe("gateway config", () => {
  it("accepts the docs/gateway.md example and fills in defaults", () => {
    const gateway = load(base)!;
    expect(gateway.origin.href).toBe("https://api.example.com/");
    expect(gateway.routes[0]).toMatchObject({ field: "routes.0", onLimit: "reject", maxDelayMs: 0, dryRun: false, key: { kind: "ip", ipv6PrefixBits: 64 } });
    expect([...gateway.routes[0]!.methods!]).toEqual(["GET", "HEAD"]);
    expect(gateway.trustProxy).toEqual([]);
    expect(gateway.originFeedback).toBe(false);
    expect(gateway.originTimeoutMs).toBe(30_000);
    expect(gateway.routes[0]!.originTimeoutMs).toBe(30_000);
  });

  it("gives each route the config's originTimeoutMs unless it sets its own", () => {
    const gateway = load({ ...base, originTimeoutMs: 5000, routes: [route, { ...route, originTimeoutMs: 120_000 }] })!;
    expect([gateway.originTimeoutMs, ...gateway.routes.map((r) => r.originTimeoutMs)]).toEqual([5000, 5000, 120_000]);
  });

  it("is absent without an origin (Spillway then serves only /v1)", () => {
    expect(load({ policies })).toBeUndefined();
    expect(createNodeGateway({ config: parseConfig({ policies }), limiter: new MemoryStore() })).toBeUndefined();
  });

  // Every error names its field, and its message states the rule and the bad value.
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ["a typo in a top-level field", { ...base, rotues: [] }, "rotues", /is not a known field/],
    ["an origin that is no URL", { ...base, origin: "api.example.com" }, "origin", /absolute http\(s\) URL.*got "api.example.com"/],
    ["an origin of another scheme", { ...base, origin: "ftp://example.com" }, "origin", /http or https/],
    ["an origin with a query", { ...base, origin: "https://example.com/?a=1" }, "origin", /query or fragment/],
    ["an origin that is not a string", { ...base, origin: 42 }, "origin", /http\(s\) URL.*got 42/],
    ["routes without an origin", { policies, routes: [route] }, "origin", /is required when routes are set/],
    ["routes that are not an array", { ...base, routes: {} }, "routes", /array of routes/],
    ["a route that is not an object", { ...base, routes: ["/api"] }, "routes.0", /got "\/api"/],
    ["a route without match", { ...base, routes: [{ key: "ip", policies: ["per-minute"] }] }, "routes.0.match", /"path"/],
    ["a relative path", withRoute({ match: { path: "api/*" } }), "routes.0.match.path", /must start with "\/"/],
    ["a wildcard inside a segment", withRoute({ match: { path: "/api/v*" } }), "routes.0.match.path", /whole segments/],
    ["a path with a query", withRoute({ match: { path: "/api?x=1" } }), "routes.0.match.path", /without a query/],
    ["an unknown method", withRoute({ match: { path: "/a", methods: ["FETCH"] } }), "routes.0.match.methods.0", /one of GET, HEAD.*got "FETCH"/],
    ["no methods", withRoute({ match: { path: "/a", methods: [] } }), "routes.0.match.methods", /at least one method/],
    ["an unknown match field", withRoute({ match: { path: "/a", hots: "x" } }), "routes.0.match.hots", /is not a known field/],
    ["a caseSensitive that is not a boolean", withRoute({ match: { path: "/a", caseSensitive: "yes" } }), "routes.0.match.caseSensitive", /true or false.*got "yes"/],
    ["a path with an encoded slash", withRoute({ match: { path: "/a%2Fb/*" } }), "routes.0.match.path", /encoded "\/" \(%2F\).*got "\/a%2Fb\/\*"/],
    ["a path with a ;param", withRoute({ match: { path: "/a;v=1/*" } }), "routes.0.match.path", /never spell/],
    ["an unknown key source", withRoute({ key: "ipv6" }), "routes.0.key", /"ip", "ip\/N".*got "ipv6"/],
    ["an IPv6 prefix out of range", withRoute({ key: "ip/200" }), "routes.0.key", /1 to 128/],
    ["a header source without a name", withRoute({ key: "header:" }), "routes.0.key", /header name/],
    ["an empty constant", withRoute({ key: "const:" }), "routes.0.key", /constant/],
    ["a bad fallback key", withRoute({ fallbackKey: "cookie" }), "routes.0.fallbackKey", /got "cookie"/],
    ["no policies", withRoute({ policies: undefined }), "routes.0.policies", /: is required \(a policy name, an inline policy or an array of them\)$/],
    ["an empty policy stack", withRoute({ policies: [] }), "routes.0.policies", /at least one policy/],
    ["an unknown policy name", withRoute({ policies: ["per-minute", "per-day"] }), "routes.0.policies.1", /no policy named "per-day"/],
    ["a bad inline policy", withRoute({ policies: [{ name: "x", limit: -1, period: "1s" }] }), "routes.0.policies.0.limit", /positive integer.*got -1/],
    ["the reserved pause policy name", withRoute({ policies: [{ name: "origin-retry-after", limit: 1, period: "1s" }] }), "routes.0.policies", /reserved/],
    ["an unknown onLimit", withRoute({ onLimit: "wait" }), "routes.0.onLimit", /"reject" or "delay".*got "wait"/],
    ["a negative maxDelayMs", withRoute({ onLimit: "delay", maxDelayMs: -1 }), "routes.0.maxDelayMs", /from 0 to 300000.*got -1/],
    ["delay without maxDelayMs", withRoute({ onLimit: "delay" }), "routes.0.maxDelayMs", /above 0 when onLimit is "delay"/],
    ["maxDelayMs with reject", withRoute({ maxDelayMs: 500 }), "routes.0.maxDelayMs", /only used with onLimit "delay"/],
    ["a dryRun that is not boolean", withRoute({ dryRun: "yes" }), "routes.0.dryRun", /true or false.*got "yes"/],
    ["an unknown route field", withRoute({ limit: 5 }), "routes.0.limit", /is not a known field/],
    ["trustProxy as a string", { ...base, trustProxy: "10.0.0.0/8" }, "trustProxy", /array of proxy addresses/],
    ["a bad trusted address", { ...base, trustProxy: ["10.0.0.300"] }, "trustProxy.0", /IPv4 or IPv6 address.*"10.0.0.300"/],
    ["a CIDR prefix too long", { ...base, trustProxy: ["10.0.0.0/33"] }, "trustProxy.0", /0 to 32/],
    ["a bad allow-list address", { ...base, allow: { ips: ["localhost"] } }, "allow.ips.0", /"localhost"/],
    ["an empty deny-list key", { ...base, deny: { keys: [""] } }, "deny.keys.0", /must not be empty/],
    // allow/deny keys name their key source as overrides do (src/gateway/access.ts).
    ["keys that are not an array", { ...base, allow: { keys: "vip" } }, "allow.keys", /array of keys like \[\{ "key": "vip", "source": "header:x-api-key" \}\].*got "vip"/],
    ["a bare allow-list key", { ...base, allow: { keys: ["vip"] } }, "allow.keys.0", /must name the key source it is for, like \{ "key": "vip", "source": "ip" \}.*any header\), got "vip"$/],
    ["an allow-list key without its source", { ...base, allow: { keys: [{ key: "vip" }] } }, "allow.keys.0.source", /is required \(an allowed key is let through only from the source it names\)/],
    ["a deny-list key object without its source", { ...base, deny: { keys: [{ key: "x" }] } }, "deny.keys.0.source", /is required \(a deny entry for every source is the bare key/],
    ["an allow-list key from no key source", { ...base, allow: { keys: [{ key: "vip", source: "ipv4" }] } }, "allow.keys.0.source", /"ip", "ip\/N".*got "ipv4"/],
    ["an allow-list source that is not a string", { ...base, allow: { keys: [{ key: "vip", source: 5 }] } }, "allow.keys.0.source", /route's key source like "ip".*got 5/],
    ["a composite source naming a part twice", { ...base, allow: { keys: [{ key: "a|b", source: ["ip", "ip"] }] } }, "allow.keys.0.source", /names one key source twice/],
    ["an allow-list source no route reads", { ...base, allow: { keys: [{ key: "vip", source: "ip" }, { key: "vip", source: "header:x-api-key" }] } }, "allow.keys.1.source", /no route reads keys from "header:x-api-key" \(the routes' key sources: "ip"\)/],
    ["a deny-list composite in another order", { ...withRoute({ key: ["header:x-api-key", "ip"] }), deny: { keys: [{ key: "a|b", source: ["ip", "header:x-api-key"] }] } }, "deny.keys.0.source", /no route reads keys from \["ip","header:x-api-key"\] \(the routes' key sources: \["header:x-api-key","ip"\]\)/],
    ["a misspelled allow-list entry field", { ...base, allow: { keys: [{ keys: ["vip"], source: "ip" }] } }, "allow.keys.0.keys", /is not a known field \(did you mean "key"\?\)/],
    ["a wildcard allow-list key", { ...base, allow: { keys: [{ key: "acme-*", source: "ip" }] } }, "allow.keys.0.key", /exact key: allow and deny lists have no wildcards.*got "acme-\*"/],
    ["a wildcard bare deny-list key", { ...base, deny: { keys: ["acme-*"] } }, "deny.keys.0", /exact key/],
    ["a deny-list entry that is a number", { ...base, deny: { keys: [7] } }, "deny.keys.0", /must be a key \(refused from every source\) or an object like \{ "key": "vip", "source": "header:x-api-key" \}, got 7/],
    ["an unknown deny-list field", { ...base, deny: { cidrs: [] } }, "deny.cidrs", /is not a known field/],
    ["originFeedback that is not boolean", { ...base, originFeedback: 1 }, "originFeedback", /true or false.*got 1/],
    ["an originTimeoutMs of 0", { ...base, originTimeoutMs: 0 }, "originTimeoutMs", /integer number of ms from 1 to 3600000.*got 0/],
    ["an originTimeoutMs in seconds text", { ...base, originTimeoutMs: "30s" }, "originTimeoutMs", /integer number of ms.*got "30s"/],
    ["a route originTimeoutMs over an hour", withRoute({ originTimeoutMs: 3_600_001 }), "routes.0.originTimeoutMs", /from 1 to 3600000.*got 3600001/],
    ["a fractional route originTimeoutMs", withRoute({ originTimeoutMs: 1.5 }), "routes.0.originTimeoutMs", /integer number of ms.*got 1.5/],
    ["a bad policy in the catalog", { ...base, policies: [{ name: "per-minute", limit: 0, period: "1m" }] }, "policies.per-minute.limit", /got 0/],
  ];

  it.each(cases)("names the field for %s", (_label, raw, field, message) => {
    const error = errorOf(raw);
    expect(error.field).toBe(field);
    expect(error.message.startsWith(`${field}: `)).toBe(true);
    expect(error.message).toMatch(message);
  });

  it("reads allow/deny keys by the name of their source, as overrides name it; deny's bare keys are for every source", () => {
    const gateway = load({
      ...base,
      routes: [{ ...route, key: "header:x-user", fallbackKey: "ip/56" }, { ...route, key: ["header:X-Api-Key", "ip/64"] }],
      allow: { keys: [{ key: "vip", source: "header:X-User" }, { key: "2001:db8:1:200::/56", source: "ip/56" }, { key: "k|203.0.113.9", source: ["header:x-api-key", "ip"] }] },
      deny: { keys: ["banned", { key: "bad", source: "header:x-user" }] },
    })!;
    const byName = (map: ReadonlyMap<string, ReadonlySet<string>>) => Object.fromEntries([...map].map(([name, keys]) => [name, [...keys]]));
    expect(byName(gateway.allow.keys.bySource)).toEqual({ "header:x-user": ["vip"], ip: ["2001:db8:1:200::/56"], "[header:x-api-key|ip]": ["k|203.0.113.9"] });
    expect([...gateway.allow.keys.everySource]).toEqual([]);
    expect(byName(gateway.deny.keys.bySource)).toEqual({ "header:x-user": ["bad"] });
    expect([...gateway.deny.keys.everySource]).toEqual(["banned"]);
  });

  it("fails when the Node gateway is built, i.e. at start", () => {
    expect(() => createNodeGateway({ config: parseConfig(withRoute({ key: "ipv6" })), limiter: new MemoryStore() })).toThrow(/^routes\.0\.key: /);
  });
});
