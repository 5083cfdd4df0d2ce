import { spawn } from "node:child_process";

const BIN = new URL("../../../../bin/spillway.mjs", import.meta.url).pathname;

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
  /** stdout then stderr. */
  output: string;
}

/**
 * Runs `spillway ARGS` to its end. Asynchronous, so that a test can start several at once: each
 * is a Node process loading the CLI (half a second of CPU), and one after another they were
 * most of the CLI test files' time.
 */
export function runSpillway(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, stdout, stderr, output: stdout + stderr }));
  });
}
