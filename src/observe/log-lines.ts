import type { BlockEvent, DecisionEvent, SpillwayObserver, StoreErrorEvent } from "./observer.js";

/**
 * One JSON log line, the same schema on both runtimes (Workers Logs on Cloudflare, stdout on
 * Node): `{"spillway":true,"event":…,"time":ISO,…}`. Events:
 * - `deny`: key, source, policies (the ones that refused), store, durationMs
 * - `fail-open`: key, source, policies (the stack), store, durationMs
 * - `store-error`: kind (`unavailable` | `fault`), operation, key, source, store, error
 * - `block`: key, source, policy, store, blockedMs (a block that a denial or a debit started)
 */
export type LogLine = { spillway: true; event: "deny" | "fail-open" | "store-error" | "block"; time: string } & Record<string, unknown>;

/** Where log lines go: by default one line on stdout (console.log, which Workers Logs collects). */
export type LogSink = (line: LogLine) => void;
export const stdoutSink: LogSink = (line) => console.log(JSON.stringify(line));

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/**
 * Logs denials, fail-open admissions and store errors as structured lines. `denials: false`
 * keeps the other two: under attack every denial is a line, which some log budgets cannot take.
 */
export function logObserver(sink: LogSink = stdoutSink, options: { denials?: boolean } = {}): SpillwayObserver {
  const logDenials = options.denials ?? true;
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
      const error = event.error instanceof Error ? `${event.error.name}: ${event.error.message}` : String(event.error);
      sink({ spillway: true, event: "store-error", time: new Date().toISOString(), kind: event.kind, operation: event.operation, key: event.key, source: event.source, store: event.store, error });
    },
  };
}
