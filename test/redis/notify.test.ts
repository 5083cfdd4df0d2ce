import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import type { Notice } from "../../src/notify/notifier.js";

const BIN = new URL("../../bin/spillway.mjs", import.meta.url).pathname;
const TOKEN = "notify-token";

/** A webhook on loopback that keeps every notice it is sent. */
async function startWebhook(): Promise<{ url: string; notices: Notice[]; close(): Promise<void> }> {
  const notices: Notice[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      notices.push(JSON.parse(body) as Notice);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, notices, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** `spillway serve` as a user starts it: a child process on its own port. */
async function serve(configPath: string, redisUrl: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, "serve", "--config", configPath, "--redis", redisUrl, "--port", "0"], { env: { ...process.env, SPILLWAY_TOKEN: TOKEN }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const match = /listening on (http:\/\/\S+)/.exec(output);
    if (match) return { child, url: match[1]! };
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`spillway serve did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function check(url: string, key: string): Promise<{ status: number; warning: boolean; header: string | null }> {
  const response = await fetch(`${url}/v1/check`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ key, policy: "monthly" }) });
  const body = (await response.json()) as { warning?: boolean };
  return { status: response.status, warning: body.warning === true, header: response.headers.get("spillway-warning") };
}

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe("notify across two spillway serve processes on one Redis", () => {
  let redis: RedisServer;
  let webhook: Awaited<ReturnType<typeof startWebhook>>;
  let origin: http.Server;
  const servers: { child: ChildProcess; url: string }[] = [];

  beforeAll(async () => {
    [redis, webhook] = await Promise.all([startRedis(), startWebhook()]);
    // An LLM-like origin for the costed route: every answer reports one token.
    origin = http.createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end('{"usage":{"total_tokens":1}}'));
    await new Promise<void>((resolve) => origin.listen(0, "127.0.0.1", resolve));
    const dir = await mkdtemp(join(tmpdir(), "spillway-notify-"));
    const configPath = join(dir, "spillway.config.json");
    const config = {
      policies: [{ name: "monthly", algorithm: "fixed-window", limit: 10, calendar: "month", timezone: "Europe/Paris", warnAt: 0.8 }],
      notify: { url: webhook.url },
      origin: `http://127.0.0.1:${(origin.address() as AddressInfo).port}`,
      routes: [{ match: { path: "/llm/*" }, key: "header:x-user", policies: ["monthly"], cost: { responseJson: "usage.total_tokens" } }],
    };
    await writeFile(configPath, JSON.stringify(config));
    servers.push(...(await Promise.all([serve(configPath, redis.url), serve(configPath, redis.url)])));
  }, 60_000);

  afterAll(async () => {
    for (const { child } of servers) child.kill("SIGKILL");
    origin?.closeAllConnections();
    await Promise.all([redis?.stop(), webhook?.close(), new Promise((resolve) => (origin ? origin.close(resolve) : resolve(undefined)))]);
  });

  it("a burst over both: warnAt flags from the 8th admission on, one warning and one exhausted webhook between them", async () => {
    // In order first, so the decision that passes warnAt is known: 7 without, the 8th with.
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await check(servers[i % 2]!.url, "acme"));
    expect(answers.map((answer) => answer.warning)).toEqual([false, false, false, false, false, false, false, true]);
    expect(answers[7]!.header).toBe('"monthly"');
    expect(answers[6]!.header).toBeNull();
    // Then a burst over both processes: 2 more admitted, the rest refused, all warned.
    const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => check(servers[i % 2]!.url, "acme")));
    expect(burst.filter((answer) => answer.status === 200)).toHaveLength(2);
    expect(burst.filter((answer) => answer.status === 429)).toHaveLength(38);
    expect(burst.every((answer) => answer.warning)).toBe(true);
    await until(() => webhook.notices.length >= 2, 10_000);
    // Past the notices' arrival, a little longer: a second copy would come now.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const events = webhook.notices.map((notice) => notice.event).sort();
    expect(events).toEqual(["exhausted", "warning"]);
    const warning = webhook.notices.find((notice) => notice.event === "warning")!;
    expect(warning).toMatchObject({ key: "acme", policy: "monthly", limit: 10 });
    expect(warning.remaining).toBeLessThanOrEqual(2);
    // The window runs to the first of next month in Paris: resetMs says so, within a second.
    expect(typeof warning.at).toBe("number");
    const exhausted = webhook.notices.find((notice) => notice.event === "exhausted")!;
    expect(exhausted).toMatchObject({ key: "acme", policy: "monthly", limit: 10, remaining: 0 });
  }, 60_000);

  it("another key is told on its own", async () => {
    const before = webhook.notices.length;
    for (let i = 0; i < 8; i++) await check(servers[i % 2]!.url, "globex");
    await until(() => webhook.notices.length > before, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(webhook.notices.slice(before).map((notice) => [notice.event, notice.key])).toEqual([["warning", "globex"]]);
  }, 60_000);

  it("a costed gateway route (peek, then debit): its refusals send exhausted, as /v1/check's do (issue 45, newcomer 1)", async () => {
    const before = webhook.notices.length;
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) {
      const response = await fetch(`${servers[i % 2]!.url}/llm/chat`, { headers: { "x-user": "initech" } });
      await response.arrayBuffer();
      statuses.push(response.status);
    }
    expect(statuses).toEqual([...Array(10).fill(200), 429, 429, 429, 429]);
    await until(() => webhook.notices.length >= before + 2, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(webhook.notices.slice(before).map((notice) => [notice.event, notice.key]).sort()).toEqual([["exhausted", "header:x-user:initech"], ["warning", "header:x-user:initech"]]);
  }, 60_000);
});
