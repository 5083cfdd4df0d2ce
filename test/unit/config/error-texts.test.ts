import { describe, expect, it } from "vitest";
import { parseConfig, parseConfigText } from "../../../src/config/config.js";
import { parseCheck, parseCredits, parseKeyRequest } from "../../../src/service/requests.js";
import { parseGatewayConfig } from "../../../src/gateway/config.js";
import { thrownMessage } from "../core/thrown-message.js";

// The error texts a newcomer met in the first hour (issue 45, "Found by a newcomer", 6), each
// with the exact words it says now: the field in Spillway's words, what it takes, and where to
// look next.

const catalog = parseConfig({ policies: [{ name: "per-minute", limit: 10, period: "1m" }] }).catalog;
const message = thrownMessage;

describe("a required field left out", () => {
  it("is 'is required (what it takes)', never the validator's 'must be nonoptional'", () => {
    const policy = "policy: is required (a policy name, an inline policy or an array of them)";
    expect(message(() => parseCheck({ key: "alice" }, catalog))).toBe(policy);
    expect(message(() => parseKeyRequest({ key: "alice" }, catalog))).toBe(policy);
    expect(message(() => parseCredits({ key: "alice", add: 1 }, catalog))).toBe(policy);
    expect(message(() => parseCheck({ policy: "per-minute" }, catalog))).toBe("key: is required (a string of 1 to 512 UTF-8 bytes)");
    // Given, but wrong, is still the rule and the value.
    expect(message(() => parseCheck({ key: 5, policy: "per-minute" }, catalog))).toBe("key: must be a string of 1 to 512 UTF-8 bytes, got 5");
  });

  it("in a config file: a policy's limit, a policy's name, an override's policy, a route's policies", () => {
    expect(message(() => parseConfig({ policies: [{ name: "a", period: "1s" }] }))).toBe("policies.a.limit: is required (a positive integer from 1 to 1000000000 (fixed-window and credits: to 1000000000000000; sliding-log: to 100000))");
    expect(message(() => parseConfig({ policies: [{ limit: 1, period: "1s" }] }))).toBe("policies.0.name: is required (a string)");
    expect(message(() => parseConfig({ policies: [], overrides: [{ key: "x" }] }))).toBe("overrides.0.policy: is required (a policy name from the config)");
    const route = { origin: "http://127.0.0.1:1", policies: [{ name: "a", limit: 1, period: "1s" }], routes: [{ match: { path: "/*" }, key: "ip" }] };
    expect(message(() => parseGatewayConfig(parseConfig(route)))).toBe("routes.0.policies: is required (a policy name, an inline policy or an array of them)");
  });
});

describe("an unknown field of a config file", () => {
  it("suggests the near one, a singular for its plural included", () => {
    expect(message(() => parseConfig({ policy: [{ name: "a", limit: 1, period: "1s" }] }))).toBe('policy: is not a known field (did you mean "policies"?)');
    const route = { origin: "http://127.0.0.1:1", policies: [{ name: "a", limit: 1, period: "1s" }], routes: [{ match: { path: "/*" }, key: "ip", policy: ["a"] }] };
    expect(message(() => parseGatewayConfig(parseConfig(route)))).toBe('routes.0.policy: is not a known field (did you mean "policies"?)');
    expect(message(() => parseConfig({ policies: [], override: [] }))).toBe('override: is not a known field (did you mean "overrides"?)');
  });
});

describe("--config is JSON", () => {
  it("a YAML file says that --config takes JSON and YAML is --rls-config's", () => {
    expect(message(() => parseConfigText("policies: []\n", "conf.yaml"))).toBe(
      "conf.yaml: is not JSON, and --config takes JSON only (spillway.config.json: the one file the Worker and Node both read); YAML is for --rls-config, envoyproxy/ratelimit's files (Unexpected token 'p', \"policies: [] \" is not valid JSON)",
    );
    // A .json file keeps the parser's words, and a YAML-named file holding JSON is read.
    expect(message(() => parseConfigText("{", "spillway.config.json"))).toMatch(/^spillway\.config\.json: is not valid JSON \(/);
    expect(parseConfigText('{"policies":[]}', "conf.yaml").policies).toEqual([]);
  });
});

