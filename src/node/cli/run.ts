// What the `spillway` commands share: a body's exit code, the config file read, the signals that stop a server.
import { readFile } from "node:fs/promises";
import { ValidationError } from "../../core/validation.js";
import type { WorkerLink } from "../cluster/worker-link.js";

/** Runs a command body, mapping a ValidationError to exit status 2 and its message. */
export async function exitCodeOf(run: () => Promise<void>): Promise<number> {
  try {
    await run();
    return 0;
  } catch (error) {
    console.error(`spillway: ${(error as Error).message}`);
    return error instanceof ValidationError ? 2 : 1;
  }
}

export async function readConfig(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "ENOENT, no such file (spillway init writes one; or pass --config PATH)" : code === "EISDIR" ? "EISDIR, a directory (pass the file)" : (code ?? (error as Error).message);
    throw new ValidationError("--config", `cannot read ${path}: ${why}`);
  }
}

/**
 * Resolves on the first SIGTERM or SIGINT: the server then shuts down gracefully. A second
 * signal while shutting down stops at once (exit 130). SIGHUP is a reload (reload.ts, onHangup).
 *
 * Started through npm (`npx spillway serve`, `npm run serve`), this process is the child of a
 * shell that npm spawned: npm passes a SIGTERM on to that shell, which dies without passing it
 * on, and the server would live on as an orphan. So under npm, losing the parent is a stop too.
 */
export function untilStopSignal(worker?: WorkerLink): Promise<void> {
  return new Promise((resolve) => {
    const parent = process.ppid;
    const orphaned = process.env.npm_command && !worker ? setInterval(() => process.ppid !== parent && stop(), 500).unref() : undefined;
    let stopping = false;
    const stop = () => {
      // A worker hears a terminal's Ctrl-C and then its primary's word: one stop, not two.
      if (stopping) return;
      stopping = true;
      clearInterval(orphaned);
      process.off("SIGTERM", stop).off("SIGINT", stop);
      process.once("SIGTERM", () => process.exit(130)).once("SIGINT", () => process.exit(130));
      resolve();
    };
    process.on("SIGTERM", stop).on("SIGINT", stop);
    // The primary's stop (worker-link.ts), before or after the server is up.
    worker?.handle({ stop });
  });
}

/** `1 policy`, `2 policies`, `0 routes`. */
export function counted(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
