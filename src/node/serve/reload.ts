import { type FSWatcher, watch } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname } from "node:path";
import type { AlgorithmName, Policy } from "../../core/types.js";
import { ValidationError } from "../../core/validation.js";
import { type LogSink, errorText, stdoutSink } from "../../observe/log-lines.js";

export type ReloadTrigger = "signal" | "watch";

/**
 * A policy that keeps its name across a reload but not its algorithm. Its keys' states were
 * written by `from` and cannot be read by `to` (each algorithm keeps other facts: a GCRA
 * timestamp, a window's count, a log of times), so every key starts fresh under it.
 */
export interface FreshPolicy {
  policy: string;
  from: AlgorithmName;
  to: AlgorithmName;
}

/** What a reload that took did: the generation now in force, and the policies whose keys start fresh. */
export interface Applied {
  generation: number;
  startFresh: FreshPolicy[];
}

/** The policies of `before` that `after` keeps by name with another algorithm (config order). */
export function policiesStartingFresh(before: readonly Policy[], after: readonly Policy[]): FreshPolicy[] {
  const was = new Map(before.map((policy) => [policy.name, policy.algorithm]));
  const fresh: FreshPolicy[] = [];
  for (const policy of after) {
    const from = was.get(policy.name);
    if (from !== undefined && from !== policy.algorithm) fresh.push({ policy: policy.name, from, to: policy.algorithm });
  }
  return fresh;
}
export type ReloadResult = "ok" | "error";

/** After the last change event, how long --watch waits for the file to settle (an editor writes in steps). */
export const WATCH_DEBOUNCE_MS = 250;

export interface ConfigReloaderOptions {
  /** The --config path, re-read on every reload. */
  path: string;
  /** The text in force at start: --watch ignores events that leave the file as it was. */
  startText: string;
  /**
   * Parses the text strictly, builds the runtime from it and swaps it in, returning the new
   * generation and the policies whose keys start fresh; throws (a ValidationError naming the
   * field) having swapped nothing.
   */
  apply(text: string): Applied;
  /** The generation in force (for the log line of a refused reload). */
  generation(): number;
  log?: LogSink;
}

/**
 * Re-reads `--config` on SIGHUP (and with --watch on change): a file that parses replaces the
 * config in force (apply); one that does not changes nothing and makes one log line naming
 * the field. Reloads run one at a time, in the order asked.
 */
export class ConfigReloader {
  readonly counts: Record<ReloadResult, number> = { ok: 0, error: 0 };
  readonly #options: ConfigReloaderOptions;
  readonly #log: LogSink;
  #queue: Promise<unknown> = Promise.resolve();
  /** The text last read, applied or not: --watch reloads only when the file says something else. */
  #lastText: string;

  constructor(options: ConfigReloaderOptions) {
    this.#options = options;
    this.#log = options.log ?? stdoutSink;
    this.#lastText = options.startText;
  }

  /** Reloads after the ones already asked; resolves with the result (never rejects). */
  reload(trigger: ReloadTrigger): Promise<ReloadResult | "unchanged"> {
    const run = this.#queue.then(() => this.#reloadOnce(trigger));
    this.#queue = run;
    return run;
  }

  async #reloadOnce(trigger: ReloadTrigger): Promise<ReloadResult | "unchanged"> {
    const { path } = this.#options;
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (error) {
      return this.#refused(trigger, new ValidationError("--config", `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`));
    }
    if (trigger === "watch" && text === this.#lastText) return "unchanged";
    return this.#applyText(trigger, text);
  }

  /**
   * Applies `text` as if it had been read from the file (a worker of `--workers`: the primary
   * read the file once and sends every worker the same text, so that they all take it or all
   * refuse it). Queued like reload.
   */
  reloadText(text: string, trigger: ReloadTrigger): Promise<ReloadResult> {
    const run = this.#queue.then(() => this.#applyText(trigger, text));
    this.#queue = run;
    return run;
  }

  #applyText(trigger: ReloadTrigger, text: string): ReloadResult {
    this.#lastText = text;
    let applied: Applied;
    try {
      applied = this.#options.apply(text);
    } catch (error) {
      return this.#refused(trigger, error);
    }
    this.counts.ok++;
    // Said in the line, not left to be found: a policy that starts fresh admits its whole limit again on every key.
    const fresh = applied.startFresh.length > 0 ? { startFresh: applied.startFresh } : {};
    this.#line({ result: "ok", generation: applied.generation, trigger, ...fresh });
    return "ok";
  }

  #refused(trigger: ReloadTrigger, error: unknown): ReloadResult {
    this.counts.error++;
    const field = error instanceof ValidationError ? { field: error.field } : {};
    this.#line({ result: "error", generation: this.#options.generation(), trigger, ...field, error: error instanceof ValidationError ? error.message : errorText(error) });
    return "error";
  }

  #line(fields: Record<string, unknown>): void {
    this.#log({ spillway: true, event: "config-reload", time: new Date().toISOString(), path: this.#options.path, ...fields });
  }

  /**
   * --watch: reloads when the file changes, WATCH_DEBOUNCE_MS after the last event. The
   * directory is watched, not the file: editors and Kubernetes replace a file by renaming
   * another over it, which ends a watch on the file itself. Returns the stop function.
   */
  watch(debounceMs = WATCH_DEBOUNCE_MS): () => void {
    let timer: NodeJS.Timeout | undefined;
    const watcher: FSWatcher = watch(dirname(this.#options.path), { persistent: false }, () => {
      clearTimeout(timer);
      timer = setTimeout(() => void this.reload("watch"), debounceMs);
    });
    watcher.on("error", (error) => {
      this.#line({ result: "error", generation: this.#options.generation(), trigger: "watch", field: "--watch", error: `stopped watching ${basename(this.#options.path)}: ${errorText(error)}` });
      watcher.close();
    });
    return () => {
      clearTimeout(timer);
      watcher.close();
    };
  }
}

/**
 * One SIGHUP handler for the whole process (`systemctl reload`): every reload asked of it
 * (--config, --rls-config) runs. Installed at start, so that SIGHUP never kills `spillway serve`.
 */
export function onHangup(reloads: ReadonlyArray<() => Promise<unknown>>): () => void {
  const handler = () => {
    for (const reload of reloads) void reload();
  };
  process.on("SIGHUP", handler);
  return () => process.off("SIGHUP", handler);
}
