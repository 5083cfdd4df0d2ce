import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const BIN = fileURLToPath(new URL("../../bin/spillway.mjs", import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A `spillway serve` process the test started: its port, the pids that serve (the workers', or its own), its output so far. */
export interface Served {
  child: ChildProcess;
  port: number;
  pids: number[];
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * Starts `spillway serve ARGS` in `cwd` and waits until it listens (with `--workers`, until it
 * names its workers' pids), at most 30 s. `port` is NaN when it never said where it listens.
 */
export async function startServe(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Served> {
  const child = spawn(process.execPath, [BIN, "serve", ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const started = args.includes("--workers") ? /workers \(pids/ : /listening on/;
  for (let i = 0; i < 600 && !started.test(output) && child.exitCode === null; i++) await sleep(50);
  const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1]);
  const workers = /workers \(pids ([\d, ]+)\)/.exec(output)?.[1];
  const pids = workers === undefined ? (args.includes("--workers") ? [] : [child.pid!]) : workers.split(", ").map(Number);
  return { child, port, pids, output: () => output, exited };
}
