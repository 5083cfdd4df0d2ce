import { mkdtemp, readFile, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { parseGatewayConfig } from "../../../../src/gateway/config.js";
import { runSpillway } from "./cli-process.js";

// Each call starts a Node process that loads the CLI: allow for a loaded CI machine.
const PROCESS_TEST_TIMEOUT_MS = 30_000;

const spillway = (...args: string[]) => runSpillway(args).then(({ status, output }) => ({ status, output }));

async function configFile(content: unknown): Promise<string> {
  const path = join(await mkdtemp(join(tmpdir(), "spillway-check-")), "spillway.config.json");
  await writeFile(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

// Concurrent: every case writes its own files and runs its own processes.
describe.concurrent("spillway check --config FILE", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("a valid config: exit 0 and a summary", async () => {
    const path = await configFile({ origin: "http://127.0.0.1:9", policies: [{ name: "per-minute", limit: 60, period: "1m" }], routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["per-minute"] }] });
    expect(await spillway("check", "--config", path)).toEqual({ status: 0, output: `spillway: ${path} is valid (1 policy, 1 route to http://127.0.0.1:9)\n` });
  });

  it.each([
    ["a misspelled policy field is named as unknown, with the field it likely meant", { policies: [{ name: "a", limt: 3, period: "1m" }] }, 'policies.a.limt: is not a known field (did you mean "limit"?)'],
    ["a misspelled top-level field", { policies: [], rotues: [] }, "rotues: is not a known field"],
    ["a bad route", { origin: "http://127.0.0.1:9", policies: [{ name: "p", limit: 1, period: "1s" }], routes: [{ match: { path: "api" }, key: "ip", policies: ["p"] }] }, "routes.0.match.path: must start with"],
    ["a route naming a missing policy", { origin: "http://127.0.0.1:9", policies: [], routes: [{ match: { path: "/a" }, key: "ip", policies: ["nope"] }] }, 'routes.0.policies.0: no policy named "nope"'],
    ["a bad usage path", { origin: "http://127.0.0.1:9", policies: [{ name: "p", limit: 1, period: "1s" }], routes: [{ match: { path: "/a" }, key: "ip", policies: ["p"], cost: { responseJson: "usage." } }] }, "routes.0.cost.responseJson: must be a dotted path"],
    ["a bad status class", { origin: "http://127.0.0.1:9", policies: [{ name: "p", limit: 1, period: "1s" }], routes: [{ match: { path: "/a" }, key: "ip", policies: ["p"], count: { status: [401, "4XX"] } }] }, "routes.0.count.status.1: must be a status code"],
    ["an unknown time zone", { policies: [{ name: "monthly", algorithm: "fixed-window", limit: 10000, calendar: "month", timezone: "Europe/Pariss" }] }, 'policies.monthly.timezone: must be an IANA time zone name such as "Europe/Paris" or "UTC", got "Europe/Pariss"'],
    ["a calendar on gcra", { policies: [{ name: "daily", limit: 100, calendar: "day" }] }, "policies.daily.calendar: is only for fixed-window"],
    ["period and calendar together", { policies: [{ name: "daily", algorithm: "fixed-window", limit: 100, period: "1d", calendar: "day" }] }, "policies.daily.calendar: replaces period"],
  ])("%s: exit 2 naming it", async (_label, config, message) => {
    const { status, output } = await spillway("check", "--config", await configFile(config));
    expect(status).toBe(2);
    expect(output).toContain(`spillway: ${message}`);
  });

  it("not JSON, a missing file, a missing flag: exit 2 naming each", async () => {
    const [notJson, missing, noFlag] = await Promise.all([spillway("check", "--config", await configFile("{nope")), spillway("check", "--config", "/nonexistent/spillway.config.json"), spillway("check")]);
    expect(notJson).toMatchObject({ status: 2, output: expect.stringContaining("is not valid JSON") });
    expect(missing).toMatchObject({ status: 2, output: expect.stringContaining("--config: cannot read") });
    expect(noFlag).toMatchObject({ status: 2, output: expect.stringContaining("--config: is required") });
  });
});

describe.concurrent("spillway init DIR", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("writes a Worker project whose config spillway check and the Worker's own validator accept", async () => {
    const dir = join(await mkdtemp(join(tmpdir(), "spillway-init-")), "My Limiter");
    const { status, output } = await spillway("init", dir);
    expect(status).toBe(0);
    expect(output).toContain("npm install && npm start");
    expect((await readdir(dir, { recursive: true })).sort()).toEqual([".dev.vars", ".gitignore", "README.md", "package.json", "spillway.config.json", "src", "src/index.ts", "wrangler.toml"]);
    const manifest = JSON.parse(await readFile(join(dir, "package.json"), "utf8"));
    const own = JSON.parse(await readFile(new URL("../../../../package.json", import.meta.url), "utf8"));
    expect(manifest).toMatchObject({ name: "my-limiter", dependencies: { spillway: `^${own.version}` }, scripts: { start: "wrangler dev" } });
    const wrangler = await readFile(join(dir, "wrangler.toml"), "utf8");
    expect(wrangler).toContain('name = "my-limiter"');
    expect(wrangler).toContain('new_sqlite_classes = ["LimiterObject", "OverridesObject"]');
    expect(wrangler).toContain("spillway check --config spillway.config.json");
    const config = JSON.parse(await readFile(join(dir, "spillway.config.json"), "utf8"));
    expect(config.$schema).toBe("./node_modules/spillway/spillway.schema.json");
    expect(parseGatewayConfig(parseConfig(config))).toBeUndefined();
    expect((await spillway("check", "--config", join(dir, "spillway.config.json"))).status).toBe(0);
  });

  it("refuses a directory that is not empty, and writes nothing", async () => {
    const dir = await mkdtemp(join(tmpdir(), "spillway-init-"));
    await writeFile(join(dir, "keep.txt"), "mine");
    expect(await spillway("init", dir)).toMatchObject({ status: 2, output: expect.stringContaining("DIR: ") });
    expect(await readdir(dir)).toEqual(["keep.txt"]);
  });

  it("refuses no directory or two", async () => {
    const [none, two] = await Promise.all([spillway("init"), spillway("init", "a", "b")]);
    expect(none).toMatchObject({ status: 2, output: expect.stringContaining("spillway init takes one directory") });
    expect(two.status).toBe(2);
  });
});
