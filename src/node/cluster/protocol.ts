/**
 * The messages between `spillway serve --workers N`'s primary (workers.ts) and its workers
 * (worker-link.ts), over node:cluster's IPC channel. Each carries `spillway` (its kind), so
 * that nothing else sent on the channel is taken for one.
 */

/** A worker to the primary. */
export type ToPrimary =
  /** Started and listening; `lines`: what it would have printed on its own (the primary prints the first worker's). */
  | { spillway: "ready"; lines: string[] }
  /** A /metrics request reached this worker: the primary answers with every worker's sum. */
  | { spillway: "scrape"; id: number }
  /** This worker's registry (prom-client's getMetricsAsJSON), for the scrape `id`. */
  | { spillway: "metrics"; id: number; metrics: unknown[] };

/** The primary to a worker. */
export type ToWorker =
  | { spillway: "collect"; id: number }
  | { spillway: "scraped"; id: number; contentType: string; body: string }
  /** SIGHUP or --watch: the --config text the primary read, the same for every worker. */
  | { spillway: "reload-config"; text: string }
  /** SIGHUP: --rls-config passed the primary's check; re-read it. */
  | { spillway: "reload-rls" }
  /** SIGTERM or SIGINT reached the primary: drain and exit. */
  | { spillway: "stop" }
  /** Every worker is listening: health may say SERVING (until then, long-lived connections would all land on the first). */
  | { spillway: "serving" };

function isSpillwayMessage(message: unknown): boolean {
  return typeof message === "object" && message !== null && typeof (message as { spillway?: unknown }).spillway === "string";
}

export function isToPrimary(message: unknown): message is ToPrimary {
  return isSpillwayMessage(message);
}

export function isToWorker(message: unknown): message is ToWorker {
  return isSpillwayMessage(message);
}
