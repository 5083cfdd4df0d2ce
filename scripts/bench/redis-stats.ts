// Redis's own time per command, from INFO commandstats: shows where a decision's time goes
// (a script's `usec` includes the commands it calls, which are also listed on their own).
import type { Redis } from "ioredis";

/** Commands that call others: when any ran, only they are counted. */
const SCRIPT_COMMANDS = new Set(["evalsha", "eval", "evalsha_ro", "eval_ro", "fcall"]);
/** Our own measurement traffic. */
const IGNORED = new Set(["info", "config", "script", "hello", "client", "ping"]);

export async function resetRedisStats(admin: Redis): Promise<void> {
  await admin.config("RESETSTAT");
}

/** Microseconds Redis spent on the benchmark's commands since the last reset. */
export async function redisUsec(admin: Redis): Promise<number> {
  const info = await admin.info("commandstats");
  const usecByCommand = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([a-z_|]+):calls=\d+,usec=(\d+)/gm)) {
    const command = match[1]!;
    if (!IGNORED.has(command)) usecByCommand.set(command, Number(match[2]));
  }
  const scripts = [...usecByCommand].filter(([command]) => SCRIPT_COMMANDS.has(command));
  const counted = scripts.length > 0 ? scripts : [...usecByCommand];
  return counted.reduce((sum, [, usec]) => sum + usec, 0);
}

/** Milliseconds of CPU the Redis process has used (INFO cpu: user + system), I/O included. */
export async function redisCpuMs(admin: Redis): Promise<number> {
  const info = await admin.info("cpu");
  const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? Number.NaN);
  return (seconds("used_cpu_user") + seconds("used_cpu_sys")) * 1000;
}
