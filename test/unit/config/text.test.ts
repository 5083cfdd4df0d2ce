import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../../src/config/config.js";
import { findDuplicateKey } from "../../../src/core/json-duplicates.js";
import { ValidationError } from "../../../src/core/validation.js";
import { runSpillway } from "../node/cli/cli-process.js";

const PROCESS_TEST_TIMEOUT_MS = 30_000;

/** `spillway ARGS` with a token in its environment. */
const spillway = (...args: string[]) => runSpillway(args, { ...process.env, SPILLWAY_TOKEN: "t" }).then(({ status, output }) => ({ status, output }));

async function configFile(text: string): Promise<string> {
  const path = join(await mkdtemp(join(tmpdir(), "spillway-text-")), "spillway.config.json");
  await writeFile(path, text);
  return path;
}

const fieldOf = (text: string): string => {
  try {
    parseConfigText(text, "spillway.config.json");
  } catch (error) {
    if (error instanceof ValidationError) return error.message;
    throw error;
  }
  return "accepted";
};

const weakened = '{ "policies": [ { "name": "per-minute", "limit": 3, "period": "1m", "limit": 3000000 } ] }';

describe("findDuplicateKey", () => {
  it.each([
    ["{}", undefined],
    ['{"a": 1, "b": {"a": 2}}', undefined],
    ['[{"a": 1}, {"a": 2}]', undefined],
    ['{"a": 1, "a": 1}', ["a"]],
    ['{"x": [1, {"y": 2}, {"z": [], "z": {}}]}', ["x", 2, "z"]],
    ['{"s": "a,\\"}]b", "a": "\\u0061", "\\u0061": 0}', ["a"]],
    ['{"o": {"k": {}, "n": null, "k": true}}', ["o", "k"]],
    [' \n{ "a" : -1.5e3 , "b" : [ ] , "c" : { } , "b" : 0 } ', ["b"]],
  ])("%s → %j", (text, path) => {
    expect(JSON.parse(text)).toBeDefined();
    expect(findDuplicateKey(text)).toEqual(path);
  });

  it("walks deep nesting without recursion", () => {
    const deep = `${"[".repeat(50_000)}{"a": 1, "a": 2}${"]".repeat(50_000)}`;
    expect(findDuplicateKey(deep)).toHaveLength(50_001);
  });
});

describe("parseConfigText", () => {
  it("refuses a field written twice, naming it (policies by name, routes by index, top level)", () => {
    expect(fieldOf(weakened)).toBe("policies.per-minute.limit: appears twice: set each field once (JSON keeps the last one silently)");
    expect(fieldOf('{ "origin": "http://127.0.0.1:1", "policies": [], "origin": "http://evil.example" }')).toMatch(/^origin: appears twice/);
    const route = '{ "origin": "http://127.0.0.1:1", "policies": [{ "name": "p", "limit": 1, "period": "1s" }], "routes": [{ "match": { "path": "/a", "path": "/b" }, "key": "ip", "policies": ["p"] }] }';
    expect(fieldOf(route)).toMatch(/^routes\.0\.match\.path: appears twice/);
    // A policy without a usable name is named by its index, as other policy errors are.
    expect(fieldOf('{ "policies": [ { "limit": 1, "limit": 2 } ] }')).toMatch(/^policies\.0\.limit: appears twice/);
  });

  it("skips a UTF-8 BOM, and an error then names the field with no invisible character", () => {
    const config = parseConfigText('\uFEFF{ "policies": [ { "name": "a", "limit": 3, "period": "1m" } ] }', "spillway.config.json");
    expect(config.policies.map((policy) => policy.limit)).toEqual([3]);
    const message = fieldOf('\uFEFF{ "polices": [] }');
    expect(message).toBe(`polices: is not a known field (did you mean "policies"?)`);
    expect(fieldOf(`\uFEFF${weakened}`)).toMatch(/^policies\.per-minute\.limit: appears twice/);
  });
});

describe("every CLI path that reads a config file", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("spillway check and spillway serve refuse a duplicated field (exit 2, named) and accept a BOM", async () => {
    const duplicated = await configFile(weakened);
    // `spillway init` projects check their config with `spillway check` before every build (wrangler.toml).
    const bom = await configFile('\uFEFF{ "policies": [ { "name": "a", "limit": 3, "period": "1m" } ] }');
    const refusing = [["check", "--config", duplicated], ["serve", "--config", duplicated, "--store", "memory", "--port", "0"]];
    // The three processes side by side: each is half a second of CPU loading the CLI.
    const [refused, accepted] = await Promise.all([Promise.all(refusing.map((args) => spillway(...args))), spillway("check", "--config", bom)]);
    refusing.forEach((args, i) => {
      expect(refused[i]!.status, args[0]).toBe(2);
      expect(refused[i]!.output).toContain("spillway: policies.per-minute.limit: appears twice");
    });
    expect(accepted).toEqual({ status: 0, output: `spillway: ${bom} is valid (1 policy)\n` });
  });
});

describe("Envoy rate limit service files in JSON", () => {
  it("refuse a key written twice and skip a BOM, as YAML files do", async () => {
    const { parseRlsText } = await import("../../../src/rls/files.js");
    expect(() => parseRlsText("edge.json", '{ "domain": "edge", "descriptors": [ { "key": "a", "key": "b" } ] }')).toThrow("edge.json: descriptors.0.key: appears twice");
    expect(parseRlsText("edge.json", '\uFEFF{ "domain": "edge" }').content).toEqual({ domain: "edge" });
    expect(() => parseRlsText("edge.yaml", "domain: edge\ndomain: other\n")).toThrow(/edge\.yaml/);
  });
});
