import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rename, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseServeArgs } from "../../../../src/node/args/serve.js";
import { configDir } from "../grpc/rls-helpers.js";

const BIN = new URL("../../../../bin/spillway.mjs", import.meta.url).pathname;
const children: ChildProcess[] = [];
// A Node process that loads the whole CLI, under load on a shared 2-core machine: generous.
const PROCESS_TEST_TIMEOUT_MS = 60_000;
const TOKEN = "reload-token";

function run(args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, SPILLWAY_TOKEN: TOKEN }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk) => (output += chunk));
  child.stderr?.on("data", (chunk) => (output += chunk));
  const waitFor = async (pattern: RegExp, from = 0, timeoutMs = 30_000): Promise<RegExpMatchArray> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = output.slice(from).match(pattern);
      if (match) return match;
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no ${pattern} in output:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  /** The `config-reload` log lines written after `from`, parsed. */
  const reloads = (from = 0) =>
    output
      .slice(from)
      .split("\n")
      .filter((line) => line.includes('"event":"config-reload"'))
      .map((line) => JSON.parse(line) as { result: string; generation: number; trigger: string; field?: string; error?: string });
  return { child, output: () => output, waitFor, reloads };
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

/**
 * Replaces a config file whole, as an editor's save or a deploy does (write beside it, rename over
 * it): `--watch` may read the file the moment it changes, and a plain writeFile lets it read a
 * half-written file (a refusal that names the file, not the field the test is about).
 */
async function replaceFile(path: string, text: string): Promise<void> {
  await writeFile(`${path}.tmp`, text);
  await rename(`${path}.tmp`, path);
}

/** An origin on loopback: answers after 10 ms, and holds /api/held until `release()`. */
async function origin() {
  let releaseHeld: () => void = () => {};
  const held = new Promise<void>((resolve) => (releaseHeld = resolve));
  const server = http.createServer((req, res) => {
    if (req.url === "/api/held") return void held.then(() => res.end("held answer"));
    setTimeout(() => res.end("ok"), 10);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, release: () => releaseHeld(), close: () => server.close() };
}

const config = (originUrl: string, limit: number | string) =>
  JSON.stringify({
    origin: originUrl,
    policies: [{ name: "per-key", algorithm: "sliding-log", limit, period: "1h" }],
    routes: [{ match: { path: "/api/*" }, key: "header:x-key", policies: ["per-key"] }],
  });

/** One GET through the gateway on `agent`, with the socket it used. */
function get(url: string, key: string, agent: http.Agent, path = "/api/x"): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}${path}`, { agent, headers: { "x-key": key } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body, socket: req.socket as Socket }));
      res.on("error", reject);
    });
    req.on("error", reject);
  });
}

const remainingOf = (headers: http.IncomingHttpHeaders) => Number(/;r=(\d+)/.exec(String(headers["ratelimit"]))?.[1]);
const quotaOf = (headers: http.IncomingHttpHeaders) => Number(/;q=(\d+)/.exec(String(headers["ratelimit-policy"]))?.[1]);

async function metric(metricsUrl: string, series: string): Promise<number> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const line = text.split("\n").find((one) => one.startsWith(`${series} `));
  return Number(line?.split(" ")[1]);
}

describe("spillway serve: reload without restart", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("SIGHUP swaps a new limit under load (no failed request, no connection dropped, state kept); a broken file changes nothing; --watch picks up a change", async () => {
    const upstream = await origin();
    const dir = await mkdtemp(join(tmpdir(), "spillway-reload-"));
    const path = join(dir, "spillway.config.json");
    await writeFile(path, config(upstream.url, 5));
    const serve = run(["serve", "--config", path, "--watch", "--store", "memory", "--port", "0", "--metrics-port", "0"]);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    try {
      const [, url] = await serve.waitFor(/listening on (http:\/\/\S+)/);
      const [, metricsUrl] = await serve.waitFor(/metrics on (\S+)\/metrics/);
      expect(await metric(metricsUrl!, "spillway_config_generation")).toBe(1);

      // State before the reload: the probe key has used 3 of 5.
      for (let i = 0; i < 3; i++) expect((await get(url!, "probe", agent)).status).toBe(200);

      // Load: four keep-alive connections, every request on a key of its own (never limited).
      const sockets = new Set<Socket>();
      let closed = 0;
      const statuses = new Map<number, number>();
      const errors: unknown[] = [];
      let stop = false;
      let sent = 0;
      const worker = async () => {
        while (!stop) {
          try {
            const answer = await get(url!, `load-${sent++}`, agent);
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
            if (!sockets.has(answer.socket)) {
              sockets.add(answer.socket);
              answer.socket.once("close", () => closed++);
            }
          } catch (error) {
            errors.push(error);
          }
        }
      };
      const load = Promise.all([worker(), worker(), worker(), worker()]);
      // A request in flight at the origin across the reload: it finishes on the config it started with.
      const inFlight = get(url!, "held", new http.Agent({ keepAlive: false }), "/api/held");
      while (sent < 40) await new Promise((resolve) => setTimeout(resolve, 10));

      let from = serve.output().length;
      await replaceFile(path, config(upstream.url, 10));
      serve.child.kill("SIGHUP");
      await serve.waitFor(/"event":"config-reload"[^\n]*"result":"ok"[^\n]*"trigger":"signal"/, from);
      const sentAtReload = sent;
      while (sent < sentAtReload + 40) await new Promise((resolve) => setTimeout(resolve, 10));
      upstream.release();
      const held = await inFlight;
      expect(held.status).toBe(200);
      expect(held.body).toBe("held answer");
      expect(quotaOf(held.headers)).toBe(5);
      stop = true;
      await load;

      expect(errors).toEqual([]);
      expect([...statuses.keys()]).toEqual([200]);
      expect(sockets.size).toBe(4);
      expect(closed).toBe(0);
      // The probe kept its 3: the fourth request sees 10 - 4 left under the new limit.
      const probe = await get(url!, "probe", agent);
      expect(quotaOf(probe.headers)).toBe(10);
      expect(remainingOf(probe.headers)).toBe(6);
      const generation = await metric(metricsUrl!, "spillway_config_generation");
      expect(generation).toBeGreaterThanOrEqual(2);

      // A broken file: refused, logged by field; the limit, the generation and the state stay.
      const errorsBefore = await metric(metricsUrl!, 'spillway_config_reloads_total{result="error"}');
      from = serve.output().length;
      await replaceFile(path, config(upstream.url, -1));
      serve.child.kill("SIGHUP");
      await serve.waitFor(/"event":"config-reload"[^\n]*"result":"error"/, from);
      const refused = serve.reloads(from).filter((line) => line.result === "error");
      expect(refused[0]).toMatchObject({ field: "policies.per-key.limit", generation });
      expect(refused[0]!.error).toContain("policies.per-key.limit: must be a positive integer");
      expect(serve.reloads(from).filter((line) => line.result === "ok")).toEqual([]);
      const after = await get(url!, "probe", agent);
      expect([after.status, quotaOf(after.headers), remainingOf(after.headers)]).toEqual([200, 10, 5]);
      expect(await metric(metricsUrl!, "spillway_config_generation")).toBe(generation);
      expect(await metric(metricsUrl!, 'spillway_config_reloads_total{result="error"}')).toBeGreaterThan(errorsBefore);

      // --watch: a fixed file is picked up without a signal.
      from = serve.output().length;
      await replaceFile(path, config(upstream.url, 20));
      await serve.waitFor(/"event":"config-reload"[^\n]*"result":"ok"[^\n]*"trigger":"watch"/, from);
      const watched = await get(url!, "probe", agent);
      expect([quotaOf(watched.headers), remainingOf(watched.headers)]).toEqual([20, 14]);
      expect(await metric(metricsUrl!, "spillway_config_generation")).toBe(generation + 1);
      expect(closed).toBe(0);
    } finally {
      agent.destroy();
      upstream.close();
    }
  });

  it("one SIGHUP reloads --config and --rls-config, each on its own", async () => {
    const dir = await mkdtemp(join(tmpdir(), "spillway-reload-"));
    const path = join(dir, "spillway.config.json");
    const policy = (limit: number) => JSON.stringify({ policies: [{ name: "per-key", algorithm: "sliding-log", limit, period: "1h" }] });
    await writeFile(path, policy(5));
    const rlsDir = await configDir({ "limits.yaml": "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 3 }\n" });
    const serve = run(["serve", "--config", path, "--store", "memory", "--port", "0", "--rls-port", "0", "--rls-config", rlsDir]);
    await serve.waitFor(/listening on/);
    await serve.waitFor(/rate limit service/);
    // A broken RLS file does not hold back a good --config.
    await writeFile(join(rlsDir, "limits.yaml"), "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: fortnight, requests_per_unit: 3 }\n");
    await writeFile(path, policy(7));
    serve.child.kill("SIGHUP");
    await serve.waitFor(/"event":"config-reload"[^\n]*"result":"ok"/);
    await serve.waitFor(/rls: reload refused/);
    // And the other way round.
    const from = serve.output().length;
    await writeFile(join(rlsDir, "limits.yaml"), "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 4 }\n");
    await writeFile(path, policy(0));
    serve.child.kill("SIGHUP");
    await serve.waitFor(/rls: reloaded/, from);
    await serve.waitFor(/"event":"config-reload"[^\n]*"result":"error"/, from);
    expect(serve.reloads().map((line) => [line.result, line.generation])).toEqual([["ok", 2], ["error", 2]]);
    expect(serve.child.exitCode).toBe(null);
  });

  it("--watch needs --config (an RLS config alone reloads on SIGHUP)", () => {
    expect(parseServeArgs(["--config", "c.json", "--watch", "--store", "memory"], {}).watch).toBe(true);
    expect(() => parseServeArgs(["--rls-port", "0", "--rls-config", "rls.yaml", "--watch", "--store", "memory"], {})).toThrow("--watch: watches --config, which is not given");
  });
});
