// A throwaway redis-server for one benchmark run: no persistence, loopback only, on a free
// port, stopped by its own pid. REDIS_URL uses an existing server instead (a shared server
// is disturbed by other tests, so the numbers are noisier).
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { Redis } from "ioredis";

export interface BenchRedis {
  url: string;
  /** What the run used, for the report ("redis-server 7.0.15 on port 40123, no persistence"). */
  description: string;
  stop(): void;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once the server answers PING (or throws after `timeoutMs`); answers its version. */
async function waitForRedis(url: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on("error", () => {});
    try {
      await client.connect();
      const info = await client.info("server");
      return /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown";
    } catch (error) {
      if (Date.now() >= deadline) throw new Error(`redis at ${url} did not answer within ${timeoutMs} ms: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      client.disconnect();
    }
  }
}

export async function startBenchRedis(): Promise<BenchRedis> {
  const existing = process.env.REDIS_URL;
  if (existing) {
    const version = await waitForRedis(existing, 5000);
    return { url: existing, description: `redis-server ${version} at REDIS_URL (shared)`, stop: () => {} };
  }
  const port = await freePort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
  const child = spawn("redis-server", args, { stdio: "ignore" });
  const stop = () => {
    if (child.exitCode === null && child.pid !== undefined) child.kill("SIGTERM");
  };
  process.once("exit", stop);
  try {
    const url = `redis://127.0.0.1:${port}`;
    const version = await waitForRedis(url, 5000);
    return { url, description: `a fresh redis-server ${version} on loopback (no persistence)`, stop };
  } catch (error) {
    stop();
    throw error;
  }
}
