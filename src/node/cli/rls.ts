// `spillway rls`: envoyproxy/ratelimit's service, configured by its environment variables.
import { ValidationError } from "../../core/validation.js";
import { onHangup } from "../serve/reload.js";
import { MissingPackageError, importNeeding } from "./optional-packages.js";
import { untilStopSignal } from "./run.js";
import { rlsTraceSettings } from "../tracing/settings.js";
import type { RunningTracing } from "../tracing/otel.js";
import { startTracing, stopTracing } from "./tracing.js";

/** What `spillway rls` loads: gRPC, its metrics and its Redis client. */
const RLS_COMMAND_PACKAGES = ["@grpc/grpc-js", "@grpc/proto-loader", "prom-client", "ioredis"];

/**
 * `spillway rls`: envoyproxy/ratelimit's service, configured by the reference's environment
 * alone (docs/envoy.md, "spillway rls"). Exit 0 after a signal's clean shutdown, 2 for a bad
 * variable or config file (the message names it), 1 for anything else. SIGHUP re-reads the files.
 */
export async function rls(argv: string[]): Promise<number> {
  if (argv.length > 0) {
    console.error(`spillway: rls takes no arguments: it is configured by envoyproxy/ratelimit's environment variables (REDIS_URL, RUNTIME_ROOT, GRPC_PORT …), got ${JSON.stringify(argv[0])}; spillway rls --help says more`);
    return 2;
  }
  const stopSignal = untilStopSignal();
  const reloads: Array<() => Promise<unknown>> = [];
  const offHangup = onHangup(reloads);
  let tracing: RunningTracing | undefined;
  try {
    // The reference's TRACING_* (or the standard OTEL_*) variables, read before anything loads.
    const traceSettings = rlsTraceSettings(process.env);
    // Loaded only for this command: its optional packages (optional-packages.ts) must be installed.
    const { startRlsCommand } = await importNeeding(() => import("../grpc/command.js"), RLS_COMMAND_PACKAGES, "the rls command");
    tracing = await startTracing(traceSettings, "tracing (TRACING_ENABLED=true or OTEL_TRACES_EXPORTER=otlp)");
    const running = await startRlsCommand(process.env, { stopped: stopSignal });
    reloads.push(() => running.reload());
    await stopSignal;
    await running.close();
    await stopTracing(tracing);
    return 0;
  } catch (error) {
    await stopTracing(tracing);
    // A stop signal while waiting for the xDS server's first config: a clean stop.
    if ((error as Error).name === "RlsStartStopped") return 0;
    console.error(`spillway: ${(error as Error).message}`);
    return error instanceof ValidationError || error instanceof MissingPackageError ? 2 : 1;
  } finally {
    offHangup();
  }
}
