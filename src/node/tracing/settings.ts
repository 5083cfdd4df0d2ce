// node/tracing: OpenTelemetry traces for `spillway serve` and `spillway rls`: the settings read
// from the environment (this file, no package needed) and the SDK behind them (otel.ts, loaded
// only when tracing is on).
import { randomUUID } from "node:crypto";
import { ValidationError } from "../../core/validation.js";

export type OtlpEncoding = "protobuf" | "json";

/** A ratio sampler, or always/never; `parentBased`: a sampled or unsampled parent decides first. */
export interface SamplerSettings {
  ratio: number;
  parentBased: boolean;
}

/** Tracing on: where spans go and how many. */
export interface TraceSettings {
  /** The OTLP/HTTP traces URL (…/v1/traces). */
  url: string;
  encoding: OtlpEncoding;
  serviceName: string;
  /** More resource attributes (service.namespace, service.instance.id). */
  resource: Record<string, string>;
  sampler: SamplerSettings;
}

type Env = Record<string, string | undefined>;

/** The OTLP/HTTP default (the specification's): a collector on this host. */
const DEFAULT_ENDPOINT = "http://localhost:4318";

const set = (env: Env, name: string) => env[name] !== undefined && env[name]!.trim() !== "";

/**
 * The standard OpenTelemetry variables, as `spillway serve` reads them: tracing is on when
 * OTEL_TRACES_EXPORTER is `otlp`, off when it is unset or `none`; OTEL_SDK_DISABLED=true turns
 * it off. A value Spillway cannot honour is a ValidationError naming the variable.
 */
export function otelTraceSettings(env: Env, defaultServiceName = "spillway"): TraceSettings | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? "").trim().toLowerCase();
  if (exporter === "" || exporter === "none") return undefined;
  if (exporter !== "otlp") throw new ValidationError("OTEL_TRACES_EXPORTER", `must be otlp or none (Spillway exports traces over OTLP/HTTP only), got ${JSON.stringify(env.OTEL_TRACES_EXPORTER)}`);
  return { ...exportTarget(env), serviceName: nonEmpty(env.OTEL_SERVICE_NAME) ?? defaultServiceName, resource: {}, sampler: otelSampler(env) };
}

/**
 * `spillway rls`: the reference's TRACING_* variables (envoyproxy/ratelimit settings.go and
 * src/trace/trace.go), or the standard ones. TRACING_ENABLED=true turns tracing on with the
 * reference's sampler (parent-based, TRACING_SAMPLING_RATE of the rest), service name
 * (TRACING_SERVICE_NAME, default RateLimit) and a random service.instance.id unless
 * TRACING_SERVICE_INSTANCE_ID names one; the endpoint is OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT as there.
 */
export function rlsTraceSettings(env: Env): TraceSettings | undefined {
  const enabled = goBool("TRACING_ENABLED", env.TRACING_ENABLED, false);
  const protocol = (env.TRACING_EXPORTER_PROTOCOL ?? "").trim();
  if (protocol !== "" && protocol !== "http") {
    const why = protocol === "grpc" ? "OTLP over gRPC is not exported: set http and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP port (4318)" : "must be http or grpc";
    throw new ValidationError("TRACING_EXPORTER_PROTOCOL", `${why}, got ${JSON.stringify(env.TRACING_EXPORTER_PROTOCOL)}`);
  }
  const rate = samplingRate(env.TRACING_SAMPLING_RATE);
  const standard = otelTraceSettings(env, "RateLimit");
  if (!enabled) return standard;
  const resource: Record<string, string> = { "service.instance.id": nonEmpty(env.TRACING_SERVICE_INSTANCE_ID) ?? randomUUID() };
  const namespace = nonEmpty(env.TRACING_SERVICE_NAMESPACE);
  if (namespace) resource["service.namespace"] = namespace;
  // The reference's variables are its own: they win over the standard ones where both speak.
  return {
    ...(standard ?? { ...exportTarget(env) }),
    serviceName: nonEmpty(env.TRACING_SERVICE_NAME) ?? "RateLimit",
    resource,
    sampler: { ratio: rate, parentBased: true },
  };
}

/** The traces URL and its encoding: OTEL_EXPORTER_OTLP_TRACES_* first, then OTEL_EXPORTER_OTLP_*. */
function exportTarget(env: Env): { url: string; encoding: OtlpEncoding } {
  const protocolName = set(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = (env[protocolName] ?? "http/protobuf").trim();
  let encoding: OtlpEncoding;
  if (protocol === "http/protobuf" || protocol === "") encoding = "protobuf";
  else if (protocol === "http/json") encoding = "json";
  else {
    const why = protocol === "grpc" ? "OTLP over gRPC is not exported: use http/protobuf (the collector's port 4318)" : "must be http/protobuf or http/json";
    throw new ValidationError(protocolName, `${why}, got ${JSON.stringify(env[protocolName])}`);
  }
  if (set(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) return { url: httpUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT!.trim()), encoding };
  // The general endpoint is a base: the signal's path is added (the specification's rule).
  const base = set(env, "OTEL_EXPORTER_OTLP_ENDPOINT") ? httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT", env.OTEL_EXPORTER_OTLP_ENDPOINT!.trim()) : DEFAULT_ENDPOINT;
  return { url: `${base.replace(/\/+$/, "")}/v1/traces`, encoding };
}

function httpUrl(name: string, text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ValidationError(name, `must be an http:// or https:// URL (the collector's OTLP/HTTP endpoint, e.g. http://localhost:4318), got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ValidationError(name, `must be an http:// or https:// URL (OTLP over gRPC is not exported), got ${JSON.stringify(text)}`);
  return text;
}

const SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"];

/** OTEL_TRACES_SAMPLER and its _ARG (default parentbased_always_on, as the specification's). */
function otelSampler(env: Env): SamplerSettings {
  const name = (env.OTEL_TRACES_SAMPLER ?? "").trim().toLowerCase() || "parentbased_always_on";
  if (!SAMPLERS.includes(name)) throw new ValidationError("OTEL_TRACES_SAMPLER", `must be one of ${SAMPLERS.join(", ")}, got ${JSON.stringify(env.OTEL_TRACES_SAMPLER)}`);
  const parentBased = name.startsWith("parentbased_");
  const base = parentBased ? name.slice("parentbased_".length) : name;
  if (base === "always_on") return { ratio: 1, parentBased };
  if (base === "always_off") return { ratio: 0, parentBased };
  const arg = env.OTEL_TRACES_SAMPLER_ARG;
  if (arg === undefined || arg.trim() === "") return { ratio: 1, parentBased };
  const ratio = Number(arg);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new ValidationError("OTEL_TRACES_SAMPLER_ARG", `must be a ratio from 0 to 1 for ${name}, got ${JSON.stringify(arg)}`);
  return { ratio, parentBased };
}

/** The reference's TRACING_SAMPLING_RATE: a number, 1 or more always samples, 0 or less never (trace.go). */
function samplingRate(text: string | undefined): number {
  if (text === undefined || text.trim() === "") return 1;
  const rate = Number(text);
  if (!Number.isFinite(rate)) throw new ValidationError("TRACING_SAMPLING_RATE", `must be a number from 0.0 to 1.0, got ${JSON.stringify(text)}`);
  return Math.min(1, Math.max(0, rate));
}

const TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/** Go's strconv.ParseBool, as the reference's envconfig reads TRACING_ENABLED. */
function goBool(name: string, text: string | undefined, fallback: boolean): boolean {
  if (text === undefined || text === "") return fallback;
  if (TRUE.has(text)) return true;
  if (FALSE.has(text)) return false;
  throw new ValidationError(name, `must be true or false, got ${JSON.stringify(text)}`);
}

const nonEmpty = (text: string | undefined) => (text !== undefined && text.trim() !== "" ? text.trim() : undefined);
