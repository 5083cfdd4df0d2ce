import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { startServe } from "./serve-process.js";

// `spillway serve --workers 2` while its workers are SIGKILLed and replaced, one after the
// other: every new connection is answered or reset (node:cluster's primary used to keep open,
// for good, the one it was handing to the worker that died: about one per kill), and the summed
// /metrics never goes down (the dead worker's counters used to vanish from the sum, which
// Prometheus reads as a counter reset).

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long a connection may stay unanswered: far past any answer on a loaded machine, far short of "for good". */
const ANSWER_WITHIN_MS = 30_000;
const KILLS = 3;
const CONNECTIONS_PER_KILL = 200;

let dir: string;
let redis: RedisServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "spillway-workers-replaced-"));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ policies: [{ name: "demo", limit: 1_000_000, period: "10s" }] }));
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function call(port: number, method: string, path: string, body?: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, agent: false, headers: { authorization: "Bearer t", connection: "close" } }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve(text));
    });
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** A new connection and one request on it: "answered", "closed" or "reset" (both fine), or "unanswered" past ANSWER_WITHIN_MS. */
function oneConnection(port: number): Promise<"answered" | "closed" | "reset" | "unanswered"> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve("unanswered");
    }, ANSWER_WITHIN_MS);
    socket.on("connect", () => socket.write("GET /healthz HTTP/1.1\r\nhost: spillway\r\nconnection: close\r\n\r\n"));
    socket.on("data", (chunk: Buffer) => (received += chunk.toString()));
    socket.on("error", () => {
      clearTimeout(timer);
      resolve("reset");
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(received.startsWith("HTTP/1.1 ") ? "answered" : "closed");
    });
  });
}

/** Every `_total` counter series of an exposition, by its line up to the value (nodejs_active_handles_total is a gauge: it may go down). */
function totals(text: string): Map<string, number> {
  const counters = new Set([...text.matchAll(/^# TYPE (\w+) counter$/gm)].map((match) => match[1]));
  const series = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^((\w+_total)(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (match && counters.has(match[2])) series.set(match[1]!, Number(match[3]));
  }
  return series;
}

describe("spillway serve --workers 2, workers killed and replaced", { timeout: 180_000 }, () => {
  it("answers or resets every new connection opened around each SIGKILL, and no summed counter goes down", async () => {
    const served = await startServe(["--config", "config.json", "--redis", redis.url, "--port", "0", "--workers", "2"], dir, { ...process.env, SPILLWAY_TOKEN: "t", REDIS_URL: undefined });
    const { port } = served;
    try {
      expect(served.pids, served.output()).toHaveLength(2);
      for (let i = 0; i < 40; i++) await call(port, "POST", "/v1/check", { key: `k-${i}`, policy: "demo" });
      // A decision is counted just after its answer is written: on a loaded machine the scrape may come first.
      let before = new Map<string, number>();
      for (let i = 0; i < 50 && before.get('spillway_decisions_total{policy="demo",outcome="allowed"}') !== 40; i++) {
        if (i > 0) await sleep(100);
        before = totals(await call(port, "GET", "/metrics"));
      }
      expect(before.get('spillway_decisions_total{policy="demo",outcome="allowed"}')).toBe(40);
      expect(before.size).toBeGreaterThan(5);

      const live = [...served.pids];
      // Every connection's outcome, by kill: awaited at the end, so that slow answers on a loaded machine overlap.
      const pending: Array<Promise<string>> = [];
      for (let kill = 0; kill < KILLS; kill++) {
        const victim = live.shift()!;
        const listening = (served.output().match(/\) listening$/gm) ?? []).length;
        // New connections before, during and after the kill: the primary hands some to the dying worker.
        const opening = (async () => {
          for (let i = 0; i < CONNECTIONS_PER_KILL; i++) {
            pending.push(oneConnection(port).then((outcome) => `${outcome} (kill ${kill + 1})`));
            if (i === 10) process.kill(victim, "SIGKILL");
            await sleep(i % 10 === 0 ? 1 : 0);
          }
        })();
        await opening;
        // The next kill only once the replacement listens: one worker always serves.
        for (let i = 0; i < 600 && (served.output().match(/\) listening$/gm) ?? []).length === listening; i++) await sleep(50);
        const replacement = [...served.output().matchAll(/worker \d+ \(pid (\d+)\) listening$/gm)].at(-1)?.[1];
        expect(replacement, served.output()).toBeDefined();
        live.push(Number(replacement));
      }
      const outcomes: Record<string, number> = {};
      for (const outcome of await Promise.all(pending)) outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      const count = (kind: string) => Object.entries(outcomes).reduce((sum, [outcome, n]) => sum + (outcome.startsWith(`${kind} `) ? n : 0), 0);
      expect(count("unanswered"), JSON.stringify(outcomes)).toBe(0);
      expect(count("answered"), JSON.stringify(outcomes)).toBeGreaterThan(KILLS * CONNECTIONS_PER_KILL * 0.9);
      expect(served.output().match(/exited \(signal SIGKILL\); starting another/g)).toHaveLength(KILLS);

      // Both workers that counted the 40 are dead: their counts are still in the sum, as is every other counter.
      const after = totals(await call(port, "GET", "/metrics"));
      const lower = [...before].filter(([series, value]) => !((after.get(series) ?? 0) >= value));
      expect(lower.map(([series, value]) => `${series}: ${value} -> ${after.get(series)}`)).toEqual([]);
      expect(after.get('spillway_decisions_total{policy="demo",outcome="allowed"}')).toBe(40);
      expect(served.output()).not.toMatch(/^\s+at /m);
    } finally {
      served.child.kill("SIGKILL");
    }
  });
});
