import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunningRlsCommand, startRlsCommand } from "../../src/node/grpc/command.js";
import { type RlsClient, rlsClient } from "../unit/node/grpc/rls-helpers.js";

/** A runtime root as the reference lays it out: ROOT/SUBDIRECTORY/config/<files>. */
export async function runtimeRoot(files: Record<string, string>, options: { subdirectory?: string; appDirectory?: string } = {}): Promise<{ root: string; dir: string }> {
  const root = await mkdtemp(join(tmpdir(), "spillway-runtime-"));
  const dir = join(root, options.subdirectory ?? "ratelimit", options.appDirectory ?? "config");
  await mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(dir, name, ".."), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return { root, dir };
}

/** Loopback, free ports, and a store timeout a loaded test machine does not run past (Spillway's default is 50 ms). */
const BASE_ENV = { GRPC_HOST: "127.0.0.1", GRPC_PORT: "0", HOST: "127.0.0.1", PORT: "0", REDIS_TIMEOUT: "2s" };

export const LIMITS = "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 3 }\n";

export interface Started {
  running: RunningRlsCommand;
  client: RlsClient;
  lines: string[];
  stop(): Promise<void>;
}

/**
 * `spillway rls` in this process (the same function the command runs), on loopback and free
 * ports unless `env` says otherwise; its log lines kept in `lines`.
 */
export async function startRls(env: Record<string, string>, options: { watchIntervalMs?: number; credentials?: Parameters<typeof rlsClient>[1]; clientOptions?: Parameters<typeof rlsClient>[2] } = {}): Promise<Started> {
  const lines: string[] = [];
  const running = await startRlsCommand({ ...BASE_ENV, ...env }, { write: (line) => lines.push(line), watchIntervalMs: options.watchIntervalMs ?? 50 });
  const client = rlsClient(running.grpcAddress, options.credentials, options.clientOptions);
  return {
    running,
    client,
    lines,
    async stop() {
      client.close();
      await running.close();
    },
  };
}

/** Why startRlsCommand refused to start (its message), or a failure when it started. */
export async function refusal(env: Record<string, string>): Promise<string> {
  try {
    const running = await startRlsCommand({ ...BASE_ENV, ...env }, { write: () => {} });
    await running.close();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("spillway rls started");
}

export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
