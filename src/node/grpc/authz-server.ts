// Envoy's external authorization service (envoy.service.auth.v3.Authorization/Check) over
// gRPC: the forward-auth decision of `spillway serve`'s routes, for the ext_authz filter's
// grpc_service (docs/proxies.md). Beside the RLS server, sharing its protos and options.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type { ForwardAuth } from "../../gateway/forward-auth.js";
import { answerEnvoyGrpc } from "../../gateway/forward-auth-envoy.js";
import { errorResponse } from "../../http/problems.js";
import { type CheckAnswer, type CheckRequestMessage, checkAnswerOf, checkOf } from "./authz-messages.js";
import { RLS_PROTO_OPTIONS, bindServer, drainServer } from "./server.js";

type ServiceDefinition = grpc.ServiceClientConstructor;

/** Loads external_auth.proto (and what it imports) from proto/: the server uses it, and so can a client (the tests do). */
export function loadAuthzProtos(): { Authorization: ServiceDefinition; Health: ServiceDefinition } {
  const definition = protoLoader.loadSync(["envoy/service/auth/v3/external_auth.proto", "grpc/health/v1/health.proto"], RLS_PROTO_OPTIONS);
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    envoy: { service: { auth: { v3: { Authorization: ServiceDefinition } } } };
    grpc: { health: { v1: { Health: ServiceDefinition } } };
  };
  return { Authorization: loaded.envoy.service.auth.v3.Authorization, Health: loaded.grpc.health.v1.Health };
}

export interface AuthzServerOptions {
  /** The decision of the runtime in force, read per call (a reload swaps it); undefined without routes. */
  auth: () => ForwardAuth | undefined;
  /** 0 picks a free port. */
  port: number;
  /** Default 127.0.0.1. */
  hostname?: string;
  /** Where unexpected errors are logged (default console.error). */
  log?: (line: string) => void;
  /** How long close() lets calls in flight finish before cutting them (default 10 s). */
  drainTimeoutMs?: number;
}

export interface RunningAuthzServer {
  port: number;
  /** host:port, as a gRPC client names it. */
  address: string;
  close(): Promise<void>;
}

const HEALTH_SERVICES = new Set(["", "envoy.service.auth.v3.Authorization"]);

/**
 * Serves Check: the CheckRequest's http attributes are decided as `/v1/forward-auth` decides
 * a proxy's fields (gateway/forward-auth-envoy.ts); the answer is a CheckResponse, never an
 * RPC error for a decision, nor for a store that failed it (an error would be Envoy's failure_mode_allow to decide, which may
 * let the request through uncounted): status OK with ok_response, or PERMISSION_DENIED
 * (INVALID_ARGUMENT for a request that cannot be read) with denied_response carrying the
 * gateway's answer (429, Retry-After, the RateLimit fields, the problem body).
 *
 * @example const authz = await startAuthzServer({ auth: () => server.forwardAuth, port: 9191 });
 */
export async function startAuthzServer(options: AuthzServerOptions): Promise<RunningAuthzServer> {
  const log = options.log ?? ((line: string) => console.error(line));
  let serving = true;
  const { Authorization, Health } = loadAuthzProtos();
  const server = new grpc.Server({ "grpc.max_receive_message_length": 1024 * 1024, "grpc.enable_channelz": 0 });
  server.addService(Authorization.service, {
    Check: (call: grpc.ServerUnaryCall<CheckRequestMessage, CheckAnswer>, callback: grpc.sendUnaryData<CheckAnswer>) => {
      const auth = options.auth();
      if (!auth) return callback({ code: grpc.status.FAILED_PRECONDITION, details: "spillway serve has no routes (the config has no origin): there is nothing for ext_authz to decide" });
      let controller: AbortController | undefined;
      const signal = () => {
        if (!controller) {
          const made = (controller = new AbortController());
          call.once("cancelled", () => made.abort());
        }
        return controller.signal;
      };
      // A failed decision (the store unreachable past failMode, shedding) is the gateway's
      // own problem answer (503, 500), denied: never an RPC error Envoy might let through.
      answerEnvoyGrpc(auth, checkOf(call.request, peerIp(call.getPeer()), signal))
        .catch(errorResponse)
        .then(checkAnswerOf)
        .then(
          (answer) => callback(null, answer),
          (error: unknown) => {
            log(`spillway: ext_authz: Check failed: ${(error as Error).message}`);
            callback({ code: grpc.status.INTERNAL, details: "internal error" });
          },
        );
    },
  });
  server.addService(Health.service, {
    Check: (call: grpc.ServerUnaryCall<{ service?: string }, { status: string }>, callback: grpc.sendUnaryData<{ status: string }>) => {
      const name = call.request.service ?? "";
      if (!HEALTH_SERVICES.has(name)) return callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${JSON.stringify(name)}` });
      callback(null, { status: serving && options.auth() ? "SERVING" : "NOT_SERVING" });
    },
  });
  const hostname = options.hostname ?? "127.0.0.1";
  const host = hostname.includes(":") ? `[${hostname}]` : hostname;
  const port = await bindServer(server, `${host}:${options.port}`, grpc.ServerCredentials.createInsecure());
  return {
    port,
    address: `${host}:${port}`,
    close() {
      serving = false;
      return drainServer(server, options.drainTimeoutMs);
    },
  };
}

/** grpc-js's peer ("127.0.0.1:5000", "::1:5000", "ipv6:[::1]:5000") as the address alone. */
export function peerIp(peer: string): string | undefined {
  const bare = peer.replace(/^ipv[46]:/, "");
  const bracketed = /^\[([^\]]+)\]:\d+$/.exec(bare);
  if (bracketed) return bracketed[1];
  const withPort = /^(.*):\d+$/.exec(bare);
  return withPort ? withPort[1] : bare || undefined;
}
