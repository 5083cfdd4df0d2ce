// wrk (Debian's `wrk`) as bench:gateway's load generator: a C event loop, so the load generator
// is not what is measured, and the proxy's own CPU time read from /proc around each run.
import { execFile } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";

export interface WrkResult {
  perSecond: number;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  /** Socket errors (connect, read, write, timeout) and answers that were not 2xx/3xx. */
  errors: number;
  non2xx: number;
  /** CPU seconds the measured process group used during the run (user + system). */
  cpuSeconds: number;
}

const durationMs = (text: string) => {
  const match = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (!match) return Number.NaN;
  const value = Number(match[1]);
  return match[2] === "us" ? value / 1000 : match[2] === "ms" ? value : value * 1000;
};

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds used so far by every process of a process group (a proxy and, for nginx, its worker). */
export function groupCpuSeconds(pgid: number): number {
  let ticks = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Fields after the command name (which may hold spaces) start at ") ".
      const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      if (Number(fields[2]) === pgid) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended while we looked.
    }
  }
  return ticks / CLOCK_TICKS_PER_SECOND;
}

/**
 * One closed-loop run: `connections` keep-alive connections on one wrk thread, for `seconds`.
 * `cpu`: wrk runs on that CPU only (taskset), away from the processes it measures.
 */
export function runWrk(url: string, connections: number, seconds: number, pgid?: number, cpu?: number): Promise<WrkResult> {
  const cpuBefore = pgid === undefined ? 0 : groupCpuSeconds(pgid);
  const wrkArgs = ["-t1", `-c${connections}`, `-d${seconds}s`, "--latency", url];
  const [command, args] = cpu === undefined ? ["wrk", wrkArgs] : ["taskset", ["-c", String(cpu), "wrk", ...wrkArgs]];
  return new Promise((resolve, reject) => {
    execFile(command, args, (error, stdout) => {
      if (error) return reject(error);
      const cpuSeconds = pgid === undefined ? 0 : groupCpuSeconds(pgid) - cpuBefore;
      const number = (pattern: RegExp) => Number(pattern.exec(stdout)?.[1] ?? 0);
      const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
      resolve({
        perSecond: number(/Requests\/sec:\s+([\d.]+)/),
        requests: number(/(\d+) requests in/),
        p50Ms: durationMs(/\s50%\s+(\S+)/.exec(stdout)?.[1] ?? ""),
        p99Ms: durationMs(/\s99%\s+(\S+)/.exec(stdout)?.[1] ?? ""),
        errors: errors ? errors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
        non2xx: number(/Non-2xx or 3xx responses: (\d+)/),
        cpuSeconds,
      });
    });
  });
}
