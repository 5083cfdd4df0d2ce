import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { parseRlsConfig } from "../../../../src/rls/config.js";
import { parseRlsText } from "../../../../src/rls/files.js";
import { COMMANDS } from "../../../../src/node/cli/main.js";
import { parseServeArgs } from "../../../../src/node/args/serve.js";
import { runSpillway } from "./cli-process.js";

// The `spillway` command as a newcomer meets it: help and version, the messages of its
// commonest mistakes, and the process's name.

const BIN = new URL("../../../../bin/spillway.mjs", import.meta.url).pathname;
const VERSION = (JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { version: string }).version;
const TIMEOUT_MS = 60_000;

const spillway = (...args: string[]) => runSpillway(args).then(({ status, stdout, stderr }) => ({ status, stdout, stderr }));

const children: ChildProcess[] = [];
const servers: Server[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const server of servers.splice(0)) server.close();
});

// Concurrent: every case only runs processes of its own.
describe.concurrent("spillway --help and --version", { timeout: TIMEOUT_MS }, () => {
  it("--help lists every command and exits 0; so do -h and help", async ({ expect }) => {
    const flags = ["--help", "-h", "help"];
    const results = await Promise.all(flags.map((flag) => spillway(flag)));
    for (const { status, stdout } of results) {
      expect(status).toBe(0);
      for (const name of Object.keys(COMMANDS)) expect(stdout).toContain(`spillway ${name}`);
      expect(stdout).toContain("spillway COMMAND --help");
    }
  });

  it("every command's --help prints its own usage and exits 0, whatever else is on the line", async ({ expect }) => {
    const commands = Object.entries(COMMANDS);
    const [own, viaHelp, withOthers] = await Promise.all([
      Promise.all(commands.map(([name]) => spillway(name, "--help"))),
      Promise.all(commands.map(([name]) => spillway("help", name))),
      spillway("serve", "--config", "missing.json", "-h"),
    ]);
    commands.forEach(([, command], i) => {
      expect(own[i]).toEqual({ status: 0, stdout: `${command.usage}\n`, stderr: "" });
      expect(viaHelp[i]!.stdout).toBe(`${command.usage}\n`);
    });
    expect(withOthers.status).toBe(0);
    expect(COMMANDS.serve!.usage).toContain("--rls-host ADDR");
  });

  it("--version prints the package's version and exits 0; an unknown command exits 2 with the overview", async ({ expect }) => {
    const [version, unknown] = await Promise.all([spillway("--version"), spillway("serv")]);
    expect(version).toEqual({ status: 0, stdout: `${VERSION}\n`, stderr: "" });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/^spillway: unknown command "serv"/);
  });
});

describe("the commonest mistakes, in one line each", { timeout: TIMEOUT_MS }, () => {
  it("a YAML syntax error names the line and column of the mistake, without a dangling colon", () => {
    const error = (text: string) => {
      try {
        parseRlsText("r.yaml", text);
      } catch (caught) {
        return (caught as Error).message;
      }
      return "parsed";
    };
    // A flow map never closed: the parser notices at the end of the file; the mistake is its `{`.
    expect(error("domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1\n")).toBe(
      "r.yaml: is not valid YAML at line 4, column 17: Flow map in block collection must be sufficiently indented and end with a }",
    );
    // A mis-indented key: noticed at column 1, it is at column 4.
    expect(error("domain: d\ndescriptors:\n  - key: b\n   value: 2\n")).toBe("r.yaml: is not valid YAML at line 4, column 4: Sequence item without - indicator");
    expect(error("domain: d\ndescriptors:\n  - key: k\n     ratelimit:\n")).toMatch(/^r\.yaml: is not valid YAML at line 3, column 10: [^:]+$/);
  });

  it("an unknown field says which known one it is near: ratelimit → rate_limit, route → routes, descriptor → descriptors", () => {
    const rls = (content: unknown) => () => parseRlsConfig([{ name: "r.yaml", content }]);
    expect(rls({ domain: "d", descriptors: [{ key: "k", ratelimit: { unit: "second", requests_per_unit: 1 } }] })).toThrow('descriptors.0.ratelimit: is not a known field (did you mean "rate_limit"?)');
    expect(rls({ domain: "d", descriptor: [] })).toThrow('descriptor: is not a known field (did you mean "descriptors"?)');
    const policies = [{ name: "a", limit: 1, period: "1m" }];
    expect(() => parseConfig({ policies, route: [] })).toThrow('route: is not a known field (did you mean "routes"?)');
    expect(() => parseConfig({ policies: [{ ...policies[0], failmode: "open" }] })).toThrow('policies.a.failmode: is not a known field (did you mean "failMode"?)');
    expect(() => parseConfig({ policies, colour: 1 })).toThrow(/^colour: is not a known field$/);
  });

  it("check counts in words: 1 policy, 2 policies", async () => {
    const dir = mkdtempSync(join(tmpdir(), "spillway-help-"));
    const write = (name: string, config: unknown) => {
      writeFileSync(join(dir, name), JSON.stringify(config));
      return join(dir, name);
    };
    const one = write("one.json", { policies: [{ name: "a", limit: 1, period: "1m" }] });
    const two = write("two.json", { policies: [{ name: "a", limit: 1, period: "1m" }, { name: "b", limit: 1, period: "1m" }] });
    const [checkedOne, checkedTwo] = await Promise.all([spillway("check", "--config", one), spillway("check", "--config", two)]);
    expect(checkedOne.stdout).toBe(`spillway: ${one} is valid (1 policy)\n`);
    expect(checkedTwo.stdout).toBe(`spillway: ${two} is valid (2 policies)\n`);
  });

  it("--rls-host is parsed, and an empty one refused naming it", () => {
    const rls = ["--store", "memory", "--rls-port", "8081", "--rls-config", "r.yaml"];
    expect(parseServeArgs([...rls, "--rls-host", "0.0.0.0"], {}).rls).toMatchObject({ port: 8081, hostname: "0.0.0.0" });
    expect(parseServeArgs(rls, {}).rls?.hostname).toBeUndefined();
    expect(() => parseServeArgs([...rls, "--rls-host", ""], {})).toThrow(/^--rls-host: must be an address/);
  });

  it("the RLS port in use is one line naming --rls-port (no grpc-js text, no stray E line)", async () => {
    const busy = createServer();
    servers.push(busy);
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const port = (busy.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), "spillway-rls-"));
    writeFileSync(join(dir, "r.yaml"), "domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n");
    const { status, stdout, stderr } = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, "serve", "--store", "memory", "--no-metrics", "--port", "0", "--rls-port", String(port), "--rls-config", join(dir, "r.yaml")], { env: { ...process.env, SPILLWAY_TOKEN: "t" } });
      children.push(child);
      let out = "";
      let err = "";
      child.stdout.on("data", (chunk) => (out += chunk));
      child.stderr.on("data", (chunk) => (err += chunk));
      child.on("close", (code) => resolve({ status: code, stdout: out, stderr: err }));
    });
    expect(status).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toBe(`spillway: cannot listen on 127.0.0.1:${port}: EADDRINUSE, the port is in use (stop what listens there, or pass another --rls-port)\n`);
  });

  it("the server's process is named spillway (pidof spillway, pkill -x spillway)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "spillway-title-"));
    writeFileSync(join(dir, "c.json"), JSON.stringify({ policies: [{ name: "a", limit: 1, period: "1m" }] }));
    const child = spawn(process.execPath, [BIN, "serve", "--config", join(dir, "c.json"), "--store", "memory", "--no-metrics", "--port", "0"], { env: { ...process.env, SPILLWAY_TOKEN: "t" } });
    children.push(child);
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", () => output.includes("listening on") && resolve());
      child.on("exit", (code) => reject(new Error(`exited ${code}: ${output}`)));
    });
    expect(readFileSync(`/proc/${child.pid}/comm`, "utf8").trim()).toBe("spillway");
    child.kill("SIGTERM");
  });
});
