import { Counter, Gauge, type Registry } from "prom-client";
import type { ConfigReloader } from "./reload.js";

/** `spillway_config_reloads_total{result}` and `spillway_config_generation`, read at scrape time. */
export function registerReloadMetrics(registry: Registry, reloader: ConfigReloader, generation: () => number): void {
  new Counter({
    name: "spillway_config_reloads_total",
    help: "Reloads of --config (SIGHUP, --watch) by result: ok (swapped in) or error (refused, the config in force kept).",
    labelNames: ["result"],
    registers: [registry],
    // --workers: every worker reloads the same text, so one worker's count is the count.
    aggregator: "max",
    collect() {
      this.reset();
      for (const result of ["ok", "error"] as const) this.inc({ result }, reloader.counts[result]);
    },
  });
  new Gauge({
    name: "spillway_config_generation",
    help: "The generation of the config in force: 1 at start, one more per reload that took.",
    registers: [registry],
    aggregator: "max",
    collect() {
      this.set(generation());
    },
  });
}
