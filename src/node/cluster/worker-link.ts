import cluster from "node:cluster";
import { type ToPrimary, type ToWorker, isToWorker } from "./protocol.js";

/** What a worker of `spillway serve --workers N` does on the primary's word. */
export interface WorkerHandlers {
  /** This worker's metrics as prom-client's JSON (undefined with --no-metrics). */
  collect?: () => Promise<unknown[]>;
  reloadConfig?: (text: string) => void;
  reloadRls?: () => void;
  stop?: () => void;
}

export interface WorkerLink {
  /** /metrics: every worker's counters and histograms summed, by the primary. */
  scrape(): Promise<{ contentType: string; body: string }>;
  /** Started: the lines the primary prints once for all workers. */
  ready(lines: string[]): void;
  /**
   * Why health must not say SERVING yet (undefined once the primary has said every worker
   * listens). A health check that passes while only some workers listen sends a proxy's
   * long-lived connections (Envoy's HTTP/2, keep-alive pools) all to those: they stay there.
   */
  notReady(): string | undefined;
  /** What this worker does on the primary's word; each call adds to (or replaces) the handlers given before. */
  handle(handlers: WorkerHandlers): void;
}

/** How long a worker waits for the primary's sum before answering /metrics with an error. */
const SCRAPE_TIMEOUT_MS = 5000;

/** The worker's end of the IPC channel (workers.ts is the primary's). Only in a cluster worker. */
export function linkToPrimary(): WorkerLink {
  const worker = cluster.worker!;
  const send = (message: ToPrimary) => worker.send(message);
  const pending = new Map<number, (answer: { contentType: string; body: string } | Error) => void>();
  let handlers: WorkerHandlers = {};
  let stopAsked = false;
  let everyWorkerListens = false;
  let nextId = 1;
  worker.on("message", (message: unknown) => {
    if (!isToWorker(message)) return;
    const to = message as ToWorker;
    if (to.spillway === "scraped") pending.get(to.id)?.({ contentType: to.contentType, body: to.body });
    else if (to.spillway === "collect") {
      const collect = handlers.collect ?? (async () => []);
      void collect().then(
        (metrics) => send({ spillway: "metrics", id: to.id, metrics }),
        () => send({ spillway: "metrics", id: to.id, metrics: [] }),
      );
    } else if (to.spillway === "reload-config") handlers.reloadConfig?.(to.text);
    else if (to.spillway === "reload-rls") handlers.reloadRls?.();
    else if (to.spillway === "serving") everyWorkerListens = true;
    else if (to.spillway === "stop") {
      stopAsked = true;
      handlers.stop?.();
    }
  });
  return {
    scrape() {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => settle(new Error(`the primary did not answer within ${SCRAPE_TIMEOUT_MS} ms`)), SCRAPE_TIMEOUT_MS);
        const settle = (answer: { contentType: string; body: string } | Error) => {
          clearTimeout(timer);
          pending.delete(id);
          if (answer instanceof Error) reject(answer);
          else resolve(answer);
        };
        pending.set(id, settle);
        send({ spillway: "scrape", id });
      });
    },
    ready(lines) {
      send({ spillway: "ready", lines });
    },
    notReady() {
      return everyWorkerListens ? undefined : "starting: not every worker of --workers listens yet";
    },
    handle(next) {
      handlers = { ...handlers, ...next };
      // A stop that came before its handler.
      if (stopAsked && next.stop) next.stop();
    },
  };
}
