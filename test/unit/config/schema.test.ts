import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { parseGatewayConfig } from "../../../src/gateway/config.js";
import { configJsonSchema } from "../../../src/node/cli/json-schema.js";

const SCHEMA_FILE = new URL("../../../spillway.schema.json", import.meta.url);
const schema = configJsonSchema();
// The schema's `date-time` format is checked (ajv-formats), not ignored with a warning on stderr.
const validate = addFormats(new Ajv2020({ strict: false, allErrors: true })).compile(schema);

/** The parser's verdict: what `spillway check`, `spillway serve` and the Worker all run. */
function parserAccepts(config: unknown): boolean {
  try {
    parseGatewayConfig(parseConfig(config));
    return true;
  } catch {
    return false;
  }
}

const gcra = { name: "per-minute", algorithm: "gcra", limit: 60, period: "1m" };
const route = { match: { path: "/api/*" }, key: "ip", policies: ["per-minute"] };
const gateway = { origin: "https://api.example.com", policies: [gcra], routes: [route] };

const valid: Array<[string, unknown]> = [
  ["empty", {}],
  ["the scaffold's config", { $schema: "./node_modules/spillway/spillway.schema.json", policies: [gcra, { name: "conc", algorithm: "concurrency", limit: 10, lease: "30s" }] }],
  ["the default algorithm", { policies: [{ name: "p", limit: 5, period: 1000 }] }],
  ["every algorithm", { policies: [gcra, { name: "tb", algorithm: "token-bucket", limit: 6, period: "3s", burst: 10 }, { name: "fw", algorithm: "fixed-window", limit: 3, period: "10s" }, { name: "sw", algorithm: "sliding-window", limit: 9, period: "1h" }, { name: "sl", algorithm: "sliding-log", limit: 100000, period: "1d" }, { name: "c", algorithm: "concurrency", limit: 4 }] }],
  ["failMode and legacyHeaders", { legacyHeaders: true, policies: [{ ...gcra, failMode: "open" }] }],
  ["a gateway", gateway],
  ["a full route", { ...gateway, routes: [{ match: { path: "/search/:q", methods: ["GET"], caseSensitive: true }, key: "header:x-api-key", fallbackKey: "ip/48", policies: ["per-minute"], onLimit: "delay", maxDelayMs: 500, dryRun: true, originTimeoutMs: 5000 }] }],
  ["hot keys", { policies: [{ name: "w", algorithm: "fixed-window", limit: 100, period: "1s", local: { share: 0.1 } }, { ...gcra, local: { share: 0 } }] }],
  ["lists and feedback", { ...gateway, trustProxy: ["10.0.0.0/8"], allow: { ips: ["127.0.0.1"], keys: [{ key: "vip", source: "ip" }] }, deny: { ips: [], keys: ["bad", { key: "worse", source: "ip/56" }] }, originFeedback: true, originTimeoutMs: 1000 }],
  ["list keys of a composite source", { ...gateway, routes: [{ ...route, key: ["header:x-api-key", "ip/56"] }], allow: { keys: [{ key: "k|2001:db8::/56", source: ["header:x-api-key", "ip/56"] }] } }],
  ["an origin without routes", { origin: "http://127.0.0.1:8788" }],
  ["every key source", { ...gateway, routes: ["ip", "ip/64", "path", "header:x-key", "query:user", "const:all", "host", "method", "cookie:sid", "cf:country", "cf:asn", "cf:colo"].map((key) => ({ ...route, key })) }],
  // h/customer: plans, composite keys, overrides, dryRun.
  ["a plan route", { ...gateway, routes: [{ ...route, match: { path: "/api/*", host: "*.example.com", headers: { "x-plan": "pro", "x-tier": ["a", "b"], "x-beta": true } } }, route] }],
  ["a composite key", { ...gateway, routes: [{ ...route, key: ["header:x-api-key", "ip/56"], fallbackKey: ["ip", "cf:country"] }] }],
  ["overrides", { policies: [gcra], overrides: [{ policy: "per-minute", key: "acme-*", limit: 6000, burst: 600, period: "1m" }, { policy: "per-minute", key: "x", period: 1000, expiresAt: "2099-01-01T00:00:00Z" }, { policy: "per-minute", key: "x", source: "ip", limit: 5 }, { policy: "per-minute", key: "a|x", source: ["header:x-api-key", "ip/56"], limit: 5 }], overridesTtl: "2s" }],
  ["a global dryRun", { ...gateway, dryRun: true }],
  ["where Durable Objects live", { policies: [gcra], durableObjects: { locationHint: "weur", jurisdiction: "eu" } }],
  // Counting what the origin answers (count, cost).
  ["status counting", { ...gateway, routes: [{ ...route, count: { status: [401, 403, "5xx"] } }] }],
  // Calendar windows and credits (SPEC §1).
  ["calendar windows and credits", { policies: [{ name: "m", algorithm: "fixed-window", limit: 10000, calendar: "month", timezone: "Europe/Paris" }, { name: "d", algorithm: "fixed-window", limit: 5, calendar: "day" }, { name: "c", algorithm: "credits", limit: 1000 }, { name: "r", algorithm: "credits", limit: 1000, refill: { calendar: "month", timezone: "America/New_York", to: 500 } }] }],
  ["a usage preset with measures, prices, an estimate in parts and provider headers", {
    origin: "https://api.openai.com",
    policies: [gcra, { name: "usd", algorithm: "fixed-window", limit: 50000000, calendar: "month" }],
    routes: [{ ...route, policies: ["per-minute", "usd"], cost: { usage: "openai", measures: { "per-minute": "input", usd: "microdollars" }, prices: { "gpt-4.1": { input: 2, output: 8 }, default: { input: 5, output: 20 } }, max: 100000, maxReadMs: 30000 }, estimate: { input: 1000, output: { requestHeader: "x-max-tokens" } }, providerHeaders: { style: "anthropic", tokens: "per-minute", inputTokens: "per-minute" } }],
  }],
  ["money budgets past 1e9 (fixed-window and credits only)", { policies: [{ name: "m", algorithm: "fixed-window", limit: 5e13, calendar: "month" }, { name: "h", algorithm: "fixed-window", limit: 1e15, period: "1h" }, { name: "c", algorithm: "credits", limit: 1e15, refill: { calendar: "month", to: 5e13 } }] }],
  ["every usage preset", { ...gateway, routes: ["openai", "openai-responses", "anthropic"].map((usage) => ({ ...route, cost: { usage, measure: "output" } })) }],
  ["every cost form", { ...gateway, routes: [5, { requestHeader: "x-cost", max: 10 }, { responseHeader: "x-usage-tokens", missing: 0 }, { responseJson: "usage.total_tokens", max: 100000, missing: 500 }, { responseJson: "usage.total_tokens", maxReadBytes: 16777216, maxReadMs: 30000 }].map((cost) => ({ ...route, cost })) }],
];

const invalid: Array<[string, unknown]> = [
  ["a misspelled top-level field", { policies: [], rotues: [] }],
  ["a misspelled policy field", { policies: [{ name: "p", limt: 3, period: "1m" }] }],
  ["a missing limit", { policies: [{ name: "p", period: "1m" }] }],
  ["a zero limit", { policies: [{ ...gcra, limit: 0 }] }],
  ["a fractional limit", { policies: [{ ...gcra, limit: 1.5 }] }],
  ["a bad name", { policies: [{ ...gcra, name: "Per Minute" }] }],
  ["an unknown algorithm", { policies: [{ ...gcra, algorithm: "leaky-bucket" }] }],
  ["a period in words", { policies: [{ ...gcra, period: "soon" }] }],
  ["a zero period", { policies: [{ ...gcra, period: 0 }] }],
  ["a rate without period", { policies: [{ name: "p", algorithm: "fixed-window", limit: 3 }] }],
  ["concurrency with a period", { policies: [{ name: "c", algorithm: "concurrency", limit: 3, period: "1m" }] }],
  ["a lease on a rate", { policies: [{ ...gcra, lease: "30s" }] }],
  ["burst on a window", { policies: [{ name: "w", algorithm: "fixed-window", limit: 3, period: "1m", burst: 5 }] }],
  ["gcra past 1e9", { policies: [{ ...gcra, limit: 1e9 + 1 }] }],
  ["the default algorithm past 1e9", { policies: [{ name: "p", limit: 5e13, period: "1m" }] }],
  ["sliding-window and token-bucket past 1e9", { policies: [{ name: "s", algorithm: "sliding-window", limit: 5e13, period: "1m" }, { name: "t", algorithm: "token-bucket", limit: 5e13, period: "1m" }] }],
  ["a fixed window past 1e15", { policies: [{ name: "w", algorithm: "fixed-window", limit: 1e15 + 1, calendar: "month" }] }],
  ["a credits refill past 1e15", { policies: [{ name: "c", algorithm: "credits", limit: 10, refill: { calendar: "month", to: 1e15 + 1 } }] }],
  ["a sliding log over its cap", { policies: [{ name: "l", algorithm: "sliding-log", limit: 100001, period: "1m" }] }],
  ["token batches on gcra", { policies: [{ ...gcra, local: { share: 0.1 } }] }],
  ["a local share over 0.5", { policies: [{ name: "w", algorithm: "fixed-window", limit: 100, period: "1s", local: { share: 0.6 } }] }],
  ["local on concurrency", { policies: [{ name: "c", algorithm: "concurrency", limit: 3, local: { share: 0 } }] }],
  ["a calendar on gcra", { policies: [{ ...gcra, period: undefined, calendar: "day" }] }],
  ["period and calendar together", { policies: [{ name: "m", algorithm: "fixed-window", limit: 3, period: "30d", calendar: "month" }] }],
  ["a calendar unit that is not one", { policies: [{ name: "m", algorithm: "fixed-window", limit: 3, calendar: "year" }] }],
  ["a time zone without a calendar", { policies: [{ name: "m", algorithm: "fixed-window", limit: 3, period: "1d", timezone: "UTC" }] }],
  ["credits with a period", { policies: [{ name: "c", algorithm: "credits", limit: 3, period: "1d" }] }],
  ["a refill on a window", { policies: [{ name: "m", algorithm: "fixed-window", limit: 3, period: "1d", refill: { calendar: "day" } }] }],
  ["a refill without a calendar", { policies: [{ name: "c", algorithm: "credits", limit: 3, refill: { to: 3 } }] }],
  ["a bad failMode", { policies: [{ ...gcra, failMode: "maybe" }] }],
  ["policies not an array", { policies: { gcra } }],
  ["legacyHeaders not a boolean", { legacyHeaders: "yes" }],
  ["routes without origin", { policies: [gcra], routes: [route] }],
  ["a route path without /", { ...gateway, routes: [{ ...route, match: { path: "api/*" } }] }],
  ["a misspelled route field", { ...gateway, routes: [{ ...route, polices: ["per-minute"] }] }],
  ["a bad key source", { ...gateway, routes: [{ ...route, key: "ipv6" }] }],
  ["an IPv6 prefix over 128", { ...gateway, routes: [{ ...route, key: "ip/129" }] }],
  ["delay without maxDelayMs", { ...gateway, routes: [{ ...route, onLimit: "delay" }] }],
  ["maxDelayMs with reject", { ...gateway, routes: [{ ...route, maxDelayMs: 100 }] }],
  ["an unknown onLimit", { ...gateway, routes: [{ ...route, onLimit: "queue" }] }],
  ["no methods", { ...gateway, routes: [{ ...route, match: { path: "/a", methods: [] } }] }],
  ["an originTimeoutMs of 0", { ...gateway, originTimeoutMs: 0 }],
  ["a route originTimeoutMs over an hour", { ...gateway, routes: [{ ...route, originTimeoutMs: 3_600_001 }] }],
  ["an empty deny key", { ...gateway, deny: { keys: [""] } }],
  ["a misspelled allow field", { ...gateway, allow: { ip: ["127.0.0.1"] } }],
  ["a bare allow key", { ...gateway, allow: { keys: ["vip"] } }],
  ["an allow key without its source", { ...gateway, allow: { keys: [{ key: "vip" }] } }],
  ["an allow key from no key source", { ...gateway, allow: { keys: [{ key: "vip", source: "ipv4" }] } }],
  ["a misspelled allow key field", { ...gateway, allow: { keys: [{ key: "vip", source: "ip", sources: [] }] } }],
  ["a wildcard deny key", { ...gateway, deny: { keys: ["acme-*"] } }],
  ["a wildcard allow key", { ...gateway, allow: { keys: [{ key: "acme-*", source: "ip" }] } }],
  ["originFeedback not a boolean", { ...gateway, originFeedback: 1 }],
  ["not an object", []],
  ["a host with a port", { ...gateway, routes: [{ ...route, match: { path: "/a", host: 5 } }] }],
  ["a header match of false", { ...gateway, routes: [{ ...route, match: { path: "/a", headers: { "x-plan": false } } }] }],
  ["an empty composite key", { ...gateway, routes: [{ ...route, key: [] }] }],
  ["a bad composite part", { ...gateway, routes: [{ ...route, key: ["ip", "cf:city"] }] }],
  ["a composite naming one source twice", { ...gateway, routes: [{ ...route, key: ["ip", "ip"] }] }],
  ["a misspelled override field", { policies: [gcra], overrides: [{ policy: "per-minute", key: "a", limt: 5 }] }],
  ["an override that changes nothing", { policies: [gcra], overrides: [{ policy: "per-minute", key: "a" }] }],
  ["an override with a zero limit", { policies: [gcra], overrides: [{ policy: "per-minute", key: "a", limit: 0 }] }],
  ["overrides not an array", { policies: [gcra], overrides: {} }],
  ["an override from no key source", { policies: [gcra], overrides: [{ policy: "per-minute", key: "a", source: "ipv4", limit: 5 }] }],
  ["an override expiring on no date", { policies: [gcra], overrides: [{ policy: "per-minute", key: "a", limit: 5, expiresAt: "next week" }] }],
  ["an overridesTtl in words", { policies: [gcra], overridesTtl: "soon" }],
  ["dryRun not a boolean", { dryRun: "yes" }],
  ["an unknown jurisdiction", { durableObjects: { jurisdiction: "mars" } }],
  ["an unknown location hint", { durableObjects: { locationHint: "WEUR" } }],
  ["a misspelled durableObjects field", { durableObjects: { jurisdictions: "eu" } }],
  ["a status class 6xx", { ...gateway, routes: [{ ...route, count: { status: ["6xx"] } }] }],
  ["an empty status list", { ...gateway, routes: [{ ...route, count: { status: [] } }] }],
  ["an unknown usage preset", { ...gateway, routes: [{ ...route, cost: { usage: "gemini" } }] }],
  ["an unknown measure", { ...gateway, routes: [{ ...route, cost: { usage: "openai", measure: "dollars" } }] }],
  ["a negative price", { ...gateway, routes: [{ ...route, cost: { usage: "openai", measures: { "per-minute": "microdollars" }, max: 1000, prices: { m: { input: -1, output: 1 } } } }] }],
  ["an estimate in parts without output", { ...gateway, routes: [{ ...route, cost: { usage: "openai" }, estimate: { input: 5 } }] }],
  ["provider headers of an unknown style", { ...gateway, routes: [{ ...route, providerHeaders: { style: "google", tokens: "per-minute" } }] }],
  ["a usage cost with onLimit delay", { ...gateway, routes: [{ ...route, cost: { usage: "openai" }, onLimit: "delay", maxDelayMs: 100 }] }],
  ["a negative cost", { ...gateway, routes: [{ ...route, cost: -1 }] }],
  ["a cost of two sources", { ...gateway, routes: [{ ...route, cost: { requestHeader: "x-a", responseJson: "a" } }] }],
  ["a responseJson path with an empty segment", { ...gateway, routes: [{ ...route, cost: { responseJson: "usage..total" } }] }],
  ["maxReadBytes below 1 KiB", { ...gateway, routes: [{ ...route, cost: { responseJson: "usage.total_tokens", maxReadBytes: 10 } }] }],
  ["maxReadMs on a header cost", { ...gateway, routes: [{ ...route, cost: { responseHeader: "x-usage", maxReadMs: 5000 } }] }],
  ["count with delay", { ...gateway, routes: [{ ...route, count: { status: [401] }, onLimit: "delay", maxDelayMs: 100 }] }],
];

describe("spillway.schema.json", () => {
  it.each(valid)("accepts what the parser accepts: %s", (_label, config) => {
    expect(parserAccepts(config)).toBe(true);
    expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
  });

  it.each(invalid)("refuses what the parser refuses: %s", (_label, config) => {
    expect(parserAccepts(config)).toBe(false);
    expect(validate(config)).toBe(false);
  });

  it("the repository's own config passes both", () => {
    const config = JSON.parse(readFileSync(new URL("../../../spillway.config.json", import.meta.url), "utf8"));
    expect(parserAccepts(config)).toBe(true);
    expect(validate(config)).toBe(true);
  });

  it("the committed file is what the build generates (npm run build rewrites it)", () => {
    expect(JSON.parse(readFileSync(SCHEMA_FILE, "utf8"))).toEqual(schema);
  });
});
