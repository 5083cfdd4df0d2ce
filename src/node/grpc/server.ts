// node/grpc: Envoy's rate limit service over gRPC: the codec, this server, `spillway rls`'s
// environment, its metrics and logs.
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ValidationError } from "../../core/validation.js";
import { type Limiter, OverloadedError, StoreFaultError, StoreUnavailableError } from "../../core/limiter.js";
import type { WireRequest } from "../../rls/request.js";
import { type RlsAnswer, RlsService, type RlsServiceOptions } from "../../rls/service.js";
import type { RlsStats } from "../../rls/stats.js";
import type { RlsConfig } from "../../rls/types.js";
import { decodeRlsRequest } from "./decode.js";
import { encodeRlsAnswer } from "./encode.js";
import { sha256Hex } from "./digest.js";
import { currentTracer } from "../../observe/trace.js";
import { traceRlsCall } from "./rls-trace.js";

/** The shipped .proto files (proto/ at the package root, beside src/ and dist/). */
export const RLS_PROTO_DIR = fileURLToPath(new URL("../../../proto", import.meta.url));

/** How the protos are decoded: the proto's field names, 64-bit numbers as strings, enums by name. */
export const RLS_PROTO_OPTIONS: protoLoader.Options = { keepCase: true, longs: String, enums: String, defaults: false, oneofs: true, includeDirs: [RLS_PROTO_DIR] };

type ServiceDefinition = grpc.ServiceClientConstructor;

/**
 * Loads rls.proto and health.proto from proto/: the server uses them, and so can a client
 * (the tests and bench:rls do).
 */
export function loadRlsProtos(): { RateLimitService: ServiceDefinition; Health: ServiceDefinition } {
  const definition = protoLoader.loadSync(["envoy/service/ratelimit/v3/rls.proto", "grpc/health/v1/health.proto"], RLS_PROTO_OPTIONS);
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: ServiceDefinition } } } };
    grpc: { health: { v1: { Health: ServiceDefinition } } };
  };
  return { RateLimitService: loaded.envoy.service.ratelimit.v3.RateLimitService, Health: loaded.grpc.health.v1.Health };
}

export interface RlsServerOptions {
  limiter: Limiter;
  config: RlsConfig;
  /** 0 picks a free port. */
  port: number;
  /** Default 127.0.0.1. */
  hostname?: string;
  /** PEM certificate chain and key: TLS instead of cleartext HTTP/2. */
  tls?: { cert: Buffer; key: Buffer };
  stats?: RlsStats;
  /** Add Spillway's RateLimit fields to response_headers_to_add. */
  responseHeaders?: boolean;
  /** The reference's global QUOTA_MODE, SHADOW_MODE, RESPONSE_DYNAMIC_METADATA, its headers and NEAR_LIMIT_RATIO (src/rls/service.ts). */
  quotaMode?: boolean;
  shadowMode?: boolean;
  dynamicMetadata?: boolean;
  referenceHeaders?: RlsServiceOptions["referenceHeaders"];
  nearLimitRatio?: number;
  /** Listen on this unix socket path instead of hostname:port (the reference's GRPC_UDS). */
  unixSocket?: string;
  /** PEM CA: clients must present a certificate it signed (mutual TLS). */
  clientCa?: Buffer;
  /** grpc-js server options to add (max connection age …). */
  grpcOptions?: Record<string, number>;
  /** More that health depends on (the reference's HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED): false answers NOT_SERVING. */
  healthy?: () => boolean;
  /** Why no config is in force yet (xDS before its first push): calls are UNAVAILABLE with that reason. */
  unconfigured?: () => string | undefined;
  /** How long close() lets calls in flight finish before cutting them (default 10 s). */
  drainTimeoutMs?: number;
  /** Where unexpected errors are logged (default console.error). */
  log?: (line: string) => void;
}

export interface RunningRlsServer {
  port: number;
  /** host:port, as a gRPC client names it. */
  address: string;
  /** Swaps the config: every request reads the one in force when it starts. */
  setConfig(config: RlsConfig): void;
  /** Health turns NOT_SERVING, new calls are refused, calls in flight finish (up to drainTimeoutMs). */
  close(): Promise<void>;
}

/** The health service names this server answers for ("" is the whole server). */
const HEALTH_SERVICES = new Set(["", "envoy.service.ratelimit.v3.RateLimitService"]);

/**
 * Envoy's rate limit service over gRPC, beside `spillway serve`'s HTTP server and on the same
 * store: `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` and
 * `grpc.health.v1.Health/Check`. Mistakes in a request are INVALID_ARGUMENT naming the field;
 * a store that cannot be reached in its timeout is UNAVAILABLE (Envoy then applies
 * failure_mode_deny) unless every limit involved is `failMode: "open"`; the caller's deadline
 * is honoured by grpc-js, and a request already past it is not counted.
 *
 * @example const rls = await startRlsServer({ limiter: new MemoryStore(), config: parseRlsConfig(files), port: 8081 });
 */
export async function startRlsServer(options: RlsServerOptions): Promise<RunningRlsServer> {
  let config = options.config;
  let serving = true;
  const log = options.log ?? ((line: string) => console.error(line));
  const service = new RlsService({
    limiter: options.limiter,
    config: () => config,
    digest: sha256Hex,
    stats: options.stats,
    responseHeaders: options.responseHeaders,
    quotaMode: options.quotaMode,
    shadowMode: options.shadowMode,
    dynamicMetadata: options.dynamicMetadata,
    referenceHeaders: options.referenceHeaders,
    nearLimitRatio: options.nearLimitRatio,
  });
  const { RateLimitService, Health } = loadRlsProtos();
  // Tracing on (src/observe/trace.ts): read once; off, the handler is the untraced one.
  const tracer = currentTracer();
  // channelz off: Spillway serves no channelz service, and its per-call bookkeeping is CPU on every decision.
  const server = new grpc.Server({ "grpc.max_receive_message_length": 1024 * 1024, "grpc.enable_channelz": 0, ...options.grpcOptions });
  server.addService(withOwnCodec(RateLimitService.service), {
    ShouldRateLimit: (call: grpc.ServerUnaryCall<WireRequest | MalformedRequest, RlsAnswer>, answer: grpc.sendUnaryData<RlsAnswer>) => {
      if (!tracer) return shouldRateLimit(call, answer);
      traceRlsCall(tracer, call, answer, call.request instanceof MalformedRequest ? undefined : call.request, (traced) => shouldRateLimit(call, traced));
    },
  });
  /** One ShouldRateLimit call, answered through `callback`. */
  function shouldRateLimit(call: grpc.ServerUnaryCall<WireRequest | MalformedRequest, RlsAnswer>, callback: grpc.sendUnaryData<RlsAnswer>): void {
    if (call.request instanceof MalformedRequest) return callback({ code: grpc.status.INVALID_ARGUMENT, details: `request: not a RateLimitRequest (${call.request.problem})` });
    const unconfigured = options.unconfigured?.();
    if (unconfigured) return callback({ code: grpc.status.UNAVAILABLE, details: unconfigured });
    if (deadlinePassed(call.getDeadline())) return callback({ code: grpc.status.DEADLINE_EXCEEDED, details: "the deadline passed before the request was read" });
    service.shouldRateLimit(call.request).then(
      (answer) => callback(null, answer),
      (error: unknown) => callback(grpcError(error, log)),
    );
  }
  server.addService(Health.service, {
    Check: (call: grpc.ServerUnaryCall<{ service?: string }, { status: string }>, callback: grpc.sendUnaryData<{ status: string }>) => {
      const name = call.request.service ?? "";
      if (!HEALTH_SERVICES.has(name)) return callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${JSON.stringify(name)}` });
      if (!serving || options.healthy?.() === false) return callback(null, { status: "NOT_SERVING" });
      options.limiter.health().then(
        (health) => callback(null, { status: health.ok ? "SERVING" : "NOT_SERVING" }),
        () => callback(null, { status: "NOT_SERVING" }),
      );
    },
  });
  const hostname = options.hostname ?? "127.0.0.1";
  const credentials = options.tls ? grpc.ServerCredentials.createSsl(options.clientCa ?? null, [{ cert_chain: options.tls.cert, private_key: options.tls.key }], options.clientCa !== undefined) : grpc.ServerCredentials.createInsecure();
  const host = hostname.includes(":") ? `[${hostname}]` : hostname;
  const target = options.unixSocket ? `unix:${options.unixSocket}` : `${host}:${options.port}`;
  const port = await bindServer(server, target, credentials);
  return {
    port,
    address: options.unixSocket ? target : `${host}:${port}`,
    setConfig(next) {
      config = next;
    },
    close() {
      serving = false;
      return drainServer(server, options.drainTimeoutMs);
    },
  };
}

/**
 * Binds a gRPC server (the RLS and ext_authz servers alike). grpc-js logs a failed bind itself
 * ("E No address added …") before calling back: Spillway says it once, naming the flag (the
 * CLI's listening()); GRPC_VERBOSITY set by hand still wins.
 */
export function bindServer(server: grpc.Server, target: string, credentials: grpc.ServerCredentials): Promise<number> {
  if (process.env.GRPC_VERBOSITY === undefined) grpc.setLogVerbosity(grpc.logVerbosity.NONE);
  return new Promise<number>((resolve, reject) => server.bindAsync(target, credentials, (error, bound) => (error ? reject(bindError(error)) : resolve(bound))));
}

/** New calls refused, calls in flight let finish for up to `drainTimeoutMs` (default 10 s), then cut. */
export function drainServer(server: grpc.Server, drainTimeoutMs = 10_000): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => server.forceShutdown(), drainTimeoutMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Bytes that are no RateLimitRequest (cut short, a length past the end): the caller's mistake,
 * answered INVALID_ARGUMENT by the handler. A deserializer that throws gets grpc-js's INTERNAL.
 */
class MalformedRequest {
  readonly problem: string;

  constructor(problem: string) {
    this.problem = problem;
  }
}

/** The service with ShouldRateLimit's request and answer read by decode.ts and written by encode.ts (proto-loader's for answers it does not write). */
function withOwnCodec(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const method = service.ShouldRateLimit as grpc.MethodDefinition<WireRequest | MalformedRequest, RlsAnswer>;
  const fallback = method.responseSerialize;
  const requestDeserialize = (bytes: Buffer) => {
    try {
      return decodeRlsRequest(bytes);
    } catch (error) {
      return new MalformedRequest((error as Error).message);
    }
  };
  return {
    ...service,
    ShouldRateLimit: { ...method, requestDeserialize, responseSerialize: (answer: RlsAnswer) => encodeRlsAnswer(answer, fallback) },
  };
}

/**
 * grpc-js's bind failure ("No address added out of total 1 resolved errors: [listen
 * EADDRINUSE: …]") as the system error it wraps, with its code, as a listen failure is.
 */
function bindError(error: Error): Error {
  const code = /\b(EADDRINUSE|EACCES|EADDRNOTAVAIL)\b/.exec(error.message)?.[1];
  if (!code) return error;
  const system = /\[([^\]]+)\]/.exec(error.message)?.[1] ?? code;
  return Object.assign(new Error(system), { code });
}

function deadlinePassed(deadline: grpc.Deadline): boolean {
  const atMs = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(atMs) && atMs <= Date.now();
}

/** A failed decision as a gRPC status, in Spillway's words. */
function grpcError(error: unknown, log: (line: string) => void): grpc.ServiceError {
  const status = (code: grpc.status, details: string) => Object.assign(new Error(details), { code, details, metadata: new grpc.Metadata() });
  if (error instanceof ValidationError) return status(grpc.status.INVALID_ARGUMENT, error.message);
  if (error instanceof StoreUnavailableError) return status(grpc.status.UNAVAILABLE, `store unavailable: ${error.message}`);
  if (error instanceof StoreFaultError) return status(grpc.status.INTERNAL, `store fault: ${error.message}`);
  // Shed, never admitted: Spillway's store calls are saturated (--max-inflight).
  if (error instanceof OverloadedError) return status(grpc.status.RESOURCE_EXHAUSTED, `overloaded: ${error.message}`);
  log(`spillway: rls: ShouldRateLimit failed: ${(error as Error).message}`);
  return status(grpc.status.INTERNAL, "internal error");
}
