// node/cluster: `spillway serve --workers N`: this primary, the worker's link to it, their protocol.
import cluster, { type Worker } from "node:cluster";
import { parseGatewayConfig } from "../../gateway/config.js";
import type { ServeArgs } from "../args/serve.js";
import { ConfigReloader, policiesStartingFresh } from "../serve/reload.js";
import { loadRlsConfig } from "../grpc/files.js";
import { configOf } from "../serve/serving.js";
import { guardHandoffs } from "./handoff.js";
import { type ToPrimary, type ToWorker, isToPrimary } from "./protocol.js";
import { type MetricJson, cumulativeOf, retire } from "./retired-counts.js";

/** A worker that dies this soon after it started, again and again, has its replacement delayed, doubling up to the cap. */
const QUICK_DEATH_MS = 5000;
const MAX_RESTART_DELAY_MS = 30_000;
/** How long a /metrics sum waits for each worker's part; a worker that has not answered is left out. */
const COLLECT_TIMEOUT_MS = 2000;

interface Slot {
  index: number;
  worker: Worker;
  startedMs: number;
  /** Consecutive deaths within QUICK_DEATH_MS of starting. */
  quickDeaths: number;
  /** Listening: it can take a dead worker's connections. */
  ready: boolean;
}

/**
 * `spillway serve --workers N`: the primary. It serves nothing itself: it starts N workers
 * (node:cluster, each running today's server on the same ports, which cluster shares), and
 * owns what must happen once for all of them:
 *
 * - startup: the first worker starts alone, so that a mistake (Redis unreachable is not one;
 *   an unknown Sentinel master name, a port in use are) is said once; the others follow. Health
 *   (/healthz, gRPC Health/Check) says not ready in every worker until all of them listen;
 * - signals: SIGTERM/SIGINT drain every worker (a second one stops them at once); SIGHUP and
 *   --watch read --config once and send every worker the same text, so a file is taken by all
 *   or refused by all, and logged once;
 * - /metrics: whichever worker gets the request asks here, and every worker's registry is
 *   summed (prom-client's AggregatorRegistry, loaded only then);
 * - a worker that dies is replaced, with one log line.
 *
 * Answers the exit code: 0 after a clean shutdown, else the code the first worker failed with.
 */
export async function runPrimary(args: ServeArgs & { workers: number }, startText: string | undefined, log: (line: string) => void = (line) => console.log(line)): Promise<number> {
  const slots = new Map<number, Slot>();
  // Until every worker has started once, a death is a failed start: it ends the primary, no restart.
  let started = false;
  let stopping = false;
  let stopped: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => (stopped = resolve));
  const broadcast = (message: ToWorker) => {
    for (const { worker } of slots.values()) if (worker.isConnected()) worker.send(message);
  };

  // /metrics sums: the worker that got the request, its request id, the parts collected so far.
  const scrapes = new Map<number, { asker: Worker; askerId: number; parts: Map<number, unknown[]>; waiting: Set<number>; timer: NodeJS.Timeout }>();
  let nextCollect = 1;
  // Each live worker's last part (its counters may stand in when it answers late), and what dead workers counted (retired-counts.ts).
  const lastParts = new Map<number, unknown[]>();
  let retired: MetricJson[] = [];
  const finishScrape = async (collectId: number) => {
    const scrape = scrapes.get(collectId);
    if (!scrape) return;
    scrapes.delete(collectId);
    clearTimeout(scrape.timer);
    // A worker that did not answer in time: its last counters, so that no sum goes down.
    const late = [...scrape.waiting].map((id) => cumulativeOf(lastParts.get(id) ?? []));
    // A worker that answered and died since is in `retired` already (lastParts no longer has it).
    const answered = [...scrape.parts].filter(([id]) => lastParts.has(id)).map(([id, part]) => (part.length > 0 ? part : cumulativeOf(lastParts.get(id)!)));
    const parts = [...answered, ...late, retired].filter((part) => part.length > 0);
    const { AggregatorRegistry } = await import("prom-client");
    const registry = AggregatorRegistry.aggregate(parts as Parameters<typeof AggregatorRegistry.aggregate>[0]);
    const body = await registry.metrics();
    if (scrape.asker.isConnected()) scrape.asker.send({ spillway: "scraped", id: scrape.askerId, contentType: registry.contentType, body } satisfies ToWorker);
  };
  const onMessage = (from: Worker, message: ToPrimary) => {
    if (message.spillway === "scrape") {
      const collectId = nextCollect++;
      const live = [...slots.values()].filter((slot) => slot.worker.isConnected());
      const timer = setTimeout(() => void finishScrape(collectId), COLLECT_TIMEOUT_MS);
      scrapes.set(collectId, { asker: from, askerId: message.id, parts: new Map(), waiting: new Set(live.map((slot) => slot.worker.id)), timer });
      for (const slot of live) slot.worker.send({ spillway: "collect", id: collectId } satisfies ToWorker);
    } else if (message.spillway === "metrics") {
      const scrape = scrapes.get(message.id);
      if (!scrape || !scrape.waiting.delete(from.id)) return;
      scrape.parts.set(from.id, message.metrics);
      // A worker whose collect failed answers []: its last counters stand in for it.
      if (message.metrics.length > 0) lastParts.set(from.id, message.metrics);
      if (scrape.waiting.size === 0) void finishScrape(message.id);
    }
  };

  // Connections handed to a worker that died before taking them: to a listening worker, or closed.
  const handoffs = guardHandoffs((dead) => [...slots.values()].find((slot) => slot.ready && slot.worker !== dead && slot.worker.isConnected())?.worker);
  const start = (index: number, quickDeaths = 0): Promise<{ ready: boolean; code: number; lines: string[] }> => {
    const worker = cluster.fork({ SPILLWAY_WORKER_INDEX: String(index) });
    handoffs.watch(worker);
    const slot: Slot = { index, worker, startedMs: performance.now(), quickDeaths, ready: false };
    slots.set(index, slot);
    return new Promise((resolve) => {
      worker.on("message", (message: unknown) => {
        if (!isToPrimary(message)) return;
        if (message.spillway === "ready") {
          slot.ready = true;
          // A replacement joins workers that already serve: it may say so at once.
          if (started) {
            worker.send({ spillway: "serving" } satisfies ToWorker);
            log(`spillway: worker ${index} (pid ${worker.process.pid}) listening`);
          }
          return resolve({ ready: true, code: 0, lines: message.lines });
        }
        onMessage(worker, message);
      });
      worker.once("exit", (code, signal) => {
        resolve({ ready: false, code: code ?? 1, lines: [] });
        // Its counts stay in every later sum; a scrape waiting for it waits no longer.
        retired = retire(retired, lastParts.get(worker.id) ?? []);
        lastParts.delete(worker.id);
        for (const [collectId, scrape] of scrapes) if (scrape.waiting.delete(worker.id) && scrape.waiting.size === 0) void finishScrape(collectId);
        if (slots.get(index)?.worker !== worker) return;
        if (stopping || !started) {
          slots.delete(index);
          if (slots.size === 0) stopped(0);
          return;
        }
        restart(index, worker, code, signal);
      });
    });
  };

  const restart = (index: number, worker: Worker, code: number | null, signal: string | null) => {
    const slot = slots.get(index)!;
    const quick = performance.now() - slot.startedMs < QUICK_DEATH_MS;
    const quickDeaths = quick ? slot.quickDeaths + 1 : 0;
    // The first death is replaced at once; one that keeps dying as it starts, after a growing pause.
    const delayMs = quickDeaths <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 500 * 2 ** (quickDeaths - 2));
    log(`spillway: worker ${index} (pid ${worker.process.pid}) exited (${signal ? `signal ${signal}` : `code ${code}`}); starting another${delayMs > 0 ? ` in ${delayMs} ms` : ""}`);
    setTimeout(() => {
      if (!stopping) void start(index, quickDeaths);
    }, delayMs).unref();
  };

  // The first worker alone: a mistake at start is said once, by it, and ends here.
  const first = await start(1);
  if (!first.ready) return first.code || 1;
  const others = await Promise.all(Array.from({ length: args.workers - 1 }, (_, i) => start(i + 2)));
  const failed = others.find((other) => !other.ready);
  if (failed) {
    stopping = true;
    broadcast({ spillway: "stop" });
    if (slots.size > 0) await done;
    return failed.code || 1;
  }
  started = true;
  // Only now may health say SERVING, in every worker: every one is in the port's rotation.
  broadcast({ spillway: "serving" });
  for (const line of first.lines) log(line);
  log(`spillway: ${args.workers} workers (pids ${[...slots.values()].map((slot) => slot.worker.process.pid).join(", ")}): one /metrics for all; SIGHUP and SIGTERM reach every worker`);

  const reloader = args.configPath && startText !== undefined ? primaryReloader(args.configPath, startText, broadcast) : undefined;
  const stopWatching = args.watch ? reloader?.watch() : undefined;
  const onHangup = () => {
    void reloader?.reload("signal");
    if (args.rls) void checkRls(args.rls.configPath, log).then((ok) => ok && broadcast({ spillway: "reload-rls" }));
  };
  let signals = 0;
  const onStop = () => {
    if (++signals > 1) {
      for (const { worker } of slots.values()) worker.process.kill("SIGKILL");
      stopped(130);
      return;
    }
    stopping = true;
    log("spillway: shutting down every worker (letting in-flight requests finish)");
    // A slot whose worker died and waits for its replacement has nothing to stop.
    for (const [index, slot] of slots) if (slot.worker.isDead()) slots.delete(index);
    broadcast({ spillway: "stop" });
    if (slots.size === 0) stopped(0);
  };
  process.on("SIGHUP", onHangup).on("SIGTERM", onStop).on("SIGINT", onStop);
  try {
    return await done;
  } finally {
    stopWatching?.();
    process.off("SIGHUP", onHangup).off("SIGTERM", onStop).off("SIGINT", onStop);
  }
}

/**
 * The primary's --config reloads: read once, checked here for the one log line, and the same
 * text sent to every worker, which applies it or refuses it as this check did.
 */
function primaryReloader(path: string, startText: string, broadcast: (message: ToWorker) => void): ConfigReloader {
  let generation = 1;
  // The policies in force, for the policies a reload starts fresh (serve-reload.ts, configReloader).
  let inForce = configOf(startText, path).policies;
  return new ConfigReloader({
    path,
    startText,
    generation: () => generation,
    apply(text) {
      // Sent whatever this check finds: each worker counts the refusal in its metrics too.
      broadcast({ spillway: "reload-config", text });
      const config = configOf(text, path);
      parseGatewayConfig(config);
      const startFresh = policiesStartingFresh(inForce, config.policies);
      inForce = config.policies;
      return { generation: ++generation, startFresh };
    },
  });
}

/** --rls-config on SIGHUP: checked here first, so that the workers re-read only a good one. */
async function checkRls(configPath: string, log: (line: string) => void): Promise<boolean> {
  try {
    const config = await loadRlsConfig(configPath);
    log(`spillway: rls: reloaded ${configPath} (${config.domains.size} domain(s)) in every worker`);
    return true;
  } catch (error) {
    log(`spillway: rls: reload refused, the config in force stays: ${(error as Error).message}`);
    return false;
  }
}
