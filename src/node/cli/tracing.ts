// Traces for `spillway serve` and `spillway rls`: on when the environment says so, the SDK loaded then and only then.
import { installTracer } from "../../observe/trace.js";
import type { RunningTracing } from "../tracing/otel.js";
import type { TraceSettings } from "../tracing/settings.js";
import { importNeeding } from "./optional-packages.js";

/** What tracing loads (optional peers): the API, the SDK, and the OTLP/HTTP exporters. */
export const TRACE_PACKAGES = [
  "@opentelemetry/api",
  "@opentelemetry/core",
  "@opentelemetry/resources",
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/exporter-trace-otlp-proto",
  "@opentelemetry/exporter-trace-otlp-http",
] as const;

/**
 * Starts exporting spans and installs the tracer every edge built from now on reads, or does
 * nothing (undefined) when `settings` says tracing is off. A missing package is a
 * MissingPackageError naming them all (exit 2), `forWhat` saying which variable asked.
 */
export async function startTracing(settings: TraceSettings | undefined, forWhat: string): Promise<RunningTracing | undefined> {
  if (!settings) return undefined;
  const { startOtelTracing } = await importNeeding(() => import("../tracing/otel.js"), TRACE_PACKAGES, forWhat);
  const running = startOtelTracing(settings);
  installTracer(running.tracer);
  return running;
}

/** Exports what is buffered (after the servers closed: their last spans are in it) and uninstalls the tracer. */
export async function stopTracing(running: RunningTracing | undefined): Promise<void> {
  if (!running) return;
  installTracer(undefined);
  await running.shutdown().catch(() => {});
}
