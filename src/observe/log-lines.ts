import type { BlockEvent, DecisionEvent, SpillwayObserver, StoreErrorEvent, StoreErrorKind } from "./observer.js";

/**
 * One JSON log line, the same schema on both runtimes (Workers Logs on Cloudflare, stdout on
 * Node): `{"spillway":true,"event":…,"time":ISO,…}`. Events:
 * - `deny`: key, source, policies (the ones that refused), store, durationMs
 * - `fail-open`: key, source, policies (the stack), store, durationMs
 * - `store-error`: kind (`unavailable` | `fault`), operation, key, source, store, error, and
 *   `suppressed` (errors of that kind left out since the last line): at most one line per
 *   kind every STORE_ERROR_LOG_INTERVAL_MS (StoreErrorLog)
 * - `store-reset`: the store lost its data (src/stores/redis/data-loss.ts)
 * - `block`: key, source, policy, store, blockedMs (a block that a denial or a debit started)
 * - `config-reload` (Node): result (`ok` | `error`), generation (the one in force after it),
 *   path, trigger (`signal` | `watch`), and for an error the `field` and `error` (src/node/serve/reload.ts)
 */
export type LogLine = { spillway: true; event: "deny" | "fail-open" | "store-error" | "store-reset" | "block" | "config-reload"; time: string } & Record<string, unknown>;

/** Where log lines go: by default one line on stdout (console.log, which Workers Logs collects). */
export type LogSink = (line: LogLine) => void;
export const stdoutSink: LogSink = (line) => console.log(JSON.stringify(line));

/** At most one `store-error` line per kind in this long (README "Logs"). */
export const STORE_ERROR_LOG_INTERVAL_MS = 10_000;

/**
 * The `store-error` log line, rate-limited: a store that faults fails every request, and a
 * line (let alone a stack trace) per request would bury everything else in the log. The first
 * error of a kind (`unavailable`, `fault`) is logged at once; errors of that kind in the next
 * `intervalMs` are only counted, and the next line logged says how many were left out
 * (`suppressed`). No stack: these errors are expected and their message says what happened.
 *
 * @example const log = new StoreErrorLog((line) => console.log(JSON.stringify(line))); log.report("fault", { error: "OOM …" });
 */
export class StoreErrorLog {
  private readonly sink: LogSink;
  private readonly intervalMs: number;
  private readonly nowMs: () => number;
  private readonly lastMs = new Map<StoreErrorKind, number>();
  private readonly suppressed = new Map<StoreErrorKind, number>();

  constructor(sink: LogSink, options: { intervalMs?: number; nowMs?: () => number } = {}) {
    this.sink = sink;
    this.intervalMs = options.intervalMs ?? STORE_ERROR_LOG_INTERVAL_MS;
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** Logs one error of `kind` with `fields` (operation, key, store, error …), or counts it. */
  report(kind: StoreErrorKind, fields: Record<string, unknown>): void {
    const nowMs = this.nowMs();
    const lastMs = this.lastMs.get(kind);
    if (lastMs !== undefined && nowMs - lastMs < this.intervalMs) {
      this.suppressed.set(kind, (this.suppressed.get(kind) ?? 0) + 1);
      return;
    }
    this.lastMs.set(kind, nowMs);
    const suppressed = this.suppressed.get(kind) ?? 0;
    this.suppressed.delete(kind);
    const line: LogLine = { spillway: true, event: "store-error", time: new Date(nowMs).toISOString(), kind, ...fields };
    if (suppressed > 0) line.suppressed = suppressed;
    this.sink(line);
  }
}

/** What an error says in a log line: its name and message, never its stack. */
export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * The process's (or isolate's) store-error log on stdout: the log observer and the HTTP error
 * path share it, so one store fault makes one line, not one from each.
 */
export const defaultStoreErrorLog = new StoreErrorLog(stdoutSink);

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/**
 * Logs denials, fail-open admissions and store errors (rate-limited) as structured lines. `denials: false`
 * keeps the other two: under attack every denial is a line, which some log budgets cannot take.
 */
export function logObserver(sink: LogSink = stdoutSink, options: { denials?: boolean } = {}): SpillwayObserver {
  const logDenials = options.denials ?? true;
  const storeErrors = sink === stdoutSink ? defaultStoreErrorLog : new StoreErrorLog(sink);
  return {
    decision(event: DecisionEvent) {
      if (event.outcome === "denied") {
        if (!logDenials) return;
        const policies = event.results ? event.results.filter((result) => !result.allowed).map((result) => result.policy) : [event.policy];
        sink({ spillway: true, event: "deny", time: new Date().toISOString(), key: event.key, source: event.source, policies, store: event.store, durationMs: round(event.durationMs) });
      } else if (event.outcome === "failed_open") {
        sink({ spillway: true, event: "fail-open", time: new Date().toISOString(), key: event.key, source: event.source, policies: event.policies.map((policy) => policy.name), store: event.store, durationMs: round(event.durationMs) });
      }
    },
    block(event: BlockEvent) {
      sink({ spillway: true, event: "block", time: new Date().toISOString(), key: event.key, source: event.source, policy: event.policy, store: event.store, blockedMs: event.blockedMs });
    },
    storeError(event: StoreErrorEvent) {
      storeErrors.report(event.kind, { operation: event.operation, key: event.key, source: event.source, store: event.store, error: errorText(event.error) });
    },
  };
}
