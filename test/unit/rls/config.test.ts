import { describe, expect, it } from "vitest";
import { parseRlsConfig } from "../../../src/rls/config.js";
import { parseRlsText } from "../../../src/rls/files.js";
import { matchDescriptor, wildcardMatches } from "../../../src/rls/match.js";
import { README_CONFIGS } from "../node/grpc/rls-helpers.js";

const parse = (text: string, name = "test.yaml") => parseRlsConfig([parseRlsText(name, text)]);
const failure = (text: string, name = "test.yaml") => {
  try {
    parse(text, name);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("parsed without an error");
};

describe("RLS config files", () => {
  it("reads every README example as written", () => {
    const config = parseRlsConfig(Object.entries(README_CONFIGS).map(([name, text]) => parseRlsText(name, text)));
    expect([...config.domains.keys()].sort()).toEqual(["edge_proxy_per_ip", "example6", "example7", "example9", "independent", "messaging", "mongo_cps", "spillway_extensions"]);
    expect(config.domains.get("independent")!.atomic).toBe(false);
    expect(config.domains.get("messaging")!.atomic).toBe(true);
  });

  it.each([
    ["domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n", "test.yaml: descriptors.0.rate_limit.unit: must be one of second, minute, hour, day, month, year, week"],
    ["domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second }\n", "test.yaml: descriptors.0.rate_limit.requests_per_unit: must be an integer from 0 to 1000000000, got nothing"],
    ["domain: d\ndescriptors:\n  - key: k\n    ratelimit: { unit: second, requests_per_unit: 1 }\n", "test.yaml: descriptors.0.ratelimit: is not a known field"],
    ["domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - value: x\n", "test.yaml: descriptors.0.descriptors.0.key: must be a non-empty string, got nothing"],
    ["domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true, unit: second }\n", "test.yaml: descriptors.0.rate_limit.unit: must not be set when unlimited is true"],
    ["domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n", 'test.yaml: descriptors.1: repeats descriptors.0 (key "k" and value "v")'],
    ["domain: d\ndescriptors:\n  - key: k\n    rate_limit: { name: a, replaces: [{ name: a }], unit: second, requests_per_unit: 1 }\n", 'test.yaml: descriptors.0.rate_limit.replaces.0.name: must not name this rate_limit itself ("a")'],
    ["domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n", 'test.yaml: descriptors.0.share_threshold: needs a wildcard value (one holding "*"), got "v"'],
    ["domain: d\ndescriptors:\n  - key: k\n    quota_mode: sometimes\n", 'test.yaml: descriptors.0.quota_mode: must be true or false, got "sometimes"'],
    ["domain: d\ndescriptors:\n  - key: k\n    metadata: [a, b]\n", "test.yaml: descriptors.0.metadata: must be a mapping"],
    ["domain: d\ndescriptors:\n  - key: k\n    metadata: { far: .inf }\n", "test.yaml: descriptors.0.metadata.far: must be text, a number"],
    ["descriptors: []\n", "test.yaml: domain: must be a non-empty string, got nothing"],
    ["domain: d\natomic: yes please\n", 'test.yaml: atomic: must be true or false, got "yes please"'],
    ["domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, algorithm: leaky }\n", "test.yaml: descriptors.0.rate_limit.algorithm: must be one of gcra"],
    ["domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, period: 10 parsecs }\n", "test.yaml: descriptors.0.rate_limit.period: must be a duration"],
    ["domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, burst: 9 }\n", "test.yaml: descriptors.0.rate_limit.burst: is only used by gcra and token-bucket"],
    ["domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, failMode: maybe }\n", 'test.yaml: descriptors.0.rate_limit.failMode: must be "open" or "closed"'],
    ["domain: d\ndescriptors:\n  - key: k\n    policies: [{ name: p, limit: 0, period: 1m }]\n", "test.yaml: descriptors.0.policies.p.limit: must be a positive integer"],
    ["domain: d\ndescriptors:\n  - key: k\n    policies: [{ name: p, algorithm: concurrency, limit: 3 }]\n", "test.yaml: descriptors.0.policies.0.algorithm: must be a rate algorithm"],
    ["domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true }\n    policies: [{ name: p, limit: 3, period: 1s }]\n", "test.yaml: descriptors.0.policies: cannot be used with an unlimited rate_limit"],
    ["domain: d\n  descriptors: [\n", "test.yaml: is not valid YAML"],
  ])("names the file and the field: %#", (text, message) => {
    expect(failure(text)).toContain(message);
  });

  it("refuses a domain defined in two files, and bad JSON by its file name", () => {
    expect(() => parseRlsConfig([parseRlsText("a.yaml", "domain: d\n"), parseRlsText("b.yaml", "domain: d\n")])).toThrow('b.yaml: domain: "d" is already defined in a.yaml (one domain per file)');
    expect(failure("{ nope", "d.json")).toContain("d.json: is not valid JSON");
    expect(failure("domain: d\ndomain: e\n")).toContain("is not valid YAML");
  });

  it("reads numbers as the text a YAML value was (phone numbers, addresses)", () => {
    const config = parse("domain: d\ndescriptors:\n  - key: to_number\n    value: 2061111111\n    rate_limit: { unit: day, requests_per_unit: 5 }\n");
    expect(matchDescriptor(config.domains.get("d")!, [["to_number", "2061111111"]])?.rule.kind).toBe("limit");
  });
});

describe("descriptor matching (the reference's rule)", () => {
  const config = parseRlsConfig(Object.entries(README_CONFIGS).map(([name, text]) => parseRlsText(name, text)));
  const domain = (name: string) => config.domains.get(name)!;

  it("prefers key and value, then a wildcard, then the bare key", () => {
    expect(matchDescriptor(domain("edge_proxy_per_ip"), [["remote_address", "50.0.0.5"]])?.rule.kind).toBe("block");
    expect(matchDescriptor(domain("edge_proxy_per_ip"), [["remote_address", "10.0.0.1"]])?.rule.kind).toBe("unlimited");
    expect(matchDescriptor(domain("edge_proxy_per_ip"), [["remote_address", "10.0.0.2"]])?.node.statKey).toBe("remote_address");
  });

  it("matches only at the request's depth", () => {
    expect(matchDescriptor(domain("messaging"), [["message_type", "marketing"]])).toBeUndefined();
    expect(matchDescriptor(domain("messaging"), [["message_type", "marketing"], ["to_number", "1"]])?.node.statKey).toBe("message_type_marketing.to_number");
    expect(matchDescriptor(domain("messaging"), [["message_type", "transactional"], ["to_number", "1"]])).toBeUndefined();
    expect(matchDescriptor(domain("messaging"), [["to_number", "1"], ["x", "y"]])).toBeUndefined();
  });

  it("names counters by the request's values, or by the pattern under share_threshold", () => {
    expect(matchDescriptor(domain("example9"), [["key1", "value7"]])?.counterEntries).toEqual([["key1", "value7"]]);
    expect(matchDescriptor(domain("example9"), [["files", "files/a.pdf"]])?.counterEntries).toEqual([["files", "files/*"]]);
  });

  it("wildcards match zero or more characters, in order", () => {
    expect(wildcardMatches(["value", ""], "value")).toBe(true);
    expect(wildcardMatches(["/api/", "/action"], "/api/1/action")).toBe(true);
    expect(wildcardMatches(["/api/", "/action"], "/api/1/other")).toBe(false);
    expect(wildcardMatches(["a", "b", "c"], "abc")).toBe(true);
    expect(wildcardMatches(["ab", "b"], "ab")).toBe(false);
    expect(wildcardMatches(["a", "b", "c"], "acb")).toBe(false);
  });
});
