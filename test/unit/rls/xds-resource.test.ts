import { describe, expect, it } from "vitest";
import { parseRlsConfig } from "../../../src/rls/config.js";
import { parseRlsText } from "../../../src/rls/files.js";
import type { RlsConfig } from "../../../src/rls/types.js";
import { rateLimitConfigFile } from "../../../src/rls/xds-resource.js";
import { README_CONFIGS } from "../node/grpc/rls-helpers.js";
import { rateLimitConfigBytes, rateLimitConfigOf, structOf } from "../node/grpc/xds-server.js";

/** The README files a RateLimitConfig can carry (the others use Spillway's extensions or share_threshold). */
const REPRESENTABLE = ["mongo_cps.yaml", "messaging.yaml", "edge_proxy_per_ip.yaml", "example6.yaml", "example7.yaml"];

/** A config without the names of the files it came from, which differ by design. */
const withoutFiles = (config: RlsConfig) => [...config.domains.values()].map(({ file: _file, ...domain }) => domain);
const overXds = (resource: Parameters<typeof rateLimitConfigBytes>[0]) => parseRlsConfig([rateLimitConfigFile(rateLimitConfigBytes(resource), 0)]);
const refusal = (resource: Parameters<typeof rateLimitConfigBytes>[0]) => {
  try {
    overXds(resource);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("accepted");
};

describe("RateLimitConfig resources: one parser with the files", () => {
  it.each(REPRESENTABLE)("%s pushed over xDS plans exactly as the file does", (name) => {
    const fromFile = parseRlsConfig([parseRlsText(name, README_CONFIGS[name]!)]);
    expect(withoutFiles(overXds(rateLimitConfigOf(name, README_CONFIGS[name]!)))).toEqual(withoutFiles(fromFile));
  });

  it("carries quota_mode, shadow_mode, detailed_metric, week units and metadata (a Struct) as a file does", () => {
    const yaml = "domain: d\ndescriptors:\n  - key: k\n    quota_mode: true\n    shadow_mode: true\n    detailed_metric: true\n    metadata: { team: pay, tier: 2, on: true, tags: [a, b], nested: { x: null } }\n    rate_limit: { unit: week, requests_per_unit: 7 }\n";
    const fromFile = parseRlsConfig([parseRlsText("d.yaml", yaml)]);
    expect(withoutFiles(overXds(rateLimitConfigOf("d", yaml)))).toEqual(withoutFiles(fromFile));
    expect(overXds(rateLimitConfigOf("d", yaml)).domains.get("d")!.level.byKey.get("k")).toMatchObject({ quotaMode: true, shadowMode: true, metadata: { team: "pay", tier: 2, on: true, tags: ["a", "b"], nested: { x: null } } });
  });

  it("refuses what the reference refuses, naming the resource and the field", () => {
    expect(refusal({ name: "bad", domain: "d", descriptors: [{ key: "k", rate_limit: { requests_per_unit: 5 } }] })).toBe('xDS resource "bad": descriptors.0.rate_limit.unit: is required (second, minute, hour or day), or Spillway\'s period');
    expect(refusal({ name: "bad", domain: "d", descriptors: [{ key: "k", rate_limit: { unit: "SECOND", unlimited: true } }] })).toBe('xDS resource "bad": descriptors.0.rate_limit.unit: must not be set when unlimited is true');
    expect(refusal({ name: "bad", domain: "", descriptors: [] })).toMatch(/^xDS resource "bad": domain: must be a non-empty string/);
    expect(refusal({ name: "bad", domain: "d", descriptors: [{ key: "" }] })).toMatch(/^xDS resource "bad": descriptors.0.key: must be a non-empty string/);
    // The reference ignores an unlimited policy's requests_per_unit: so does the conversion.
    expect(overXds({ name: "ok", domain: "d", descriptors: [{ key: "k", rate_limit: { unlimited: true, requests_per_unit: 9 } }] }).domains.get("d")!.level.byKey.get("k")!.rule).toEqual({ kind: "unlimited", replaces: [] });
  });

  it("bytes that are no RateLimitConfig are an error naming the resource, never a throw of another kind", () => {
    for (const bytes of [Buffer.from([0xff]), Buffer.from([0x12, 0x09, 0x61]), Buffer.from([0x0f]), Buffer.from([0x12, 0x02, 0xc3, 0x28])]) {
      expect(() => rateLimitConfigFile(bytes, 3)).toThrow(/^xDS resource 3: is not a RateLimitConfig \(/);
    }
    expect(structOf({})).toEqual({ fields: {} });
    // A metadata key named __proto__ is data, not the object's prototype.
    const pushed = overXds({ name: "p", domain: "d", descriptors: [{ key: "k", metadata: { fields: { ["__proto__"]: { stringValue: "x" } } } }] });
    const metadata = pushed.domains.get("d")!.level.byKey.get("k")!.metadata!;
    expect([Object.getPrototypeOf(metadata) === Object.prototype, Object.keys(metadata)]).toEqual([true, ["__proto__"]]);
  });
});
