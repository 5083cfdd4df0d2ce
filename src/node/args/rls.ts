import { ValidationError } from "../../core/validation.js";

/** `spillway serve`'s flags for Envoy's rate limit service (src/node/grpc/serve.ts). */
export interface RlsArgs {
  port: number;
  /** --rls-host: the address the gRPC port binds (default: --host's). */
  hostname?: string;
  /** A YAML or JSON file, or a directory of them (one domain per file). */
  configPath: string;
  tls?: { certPath: string; keyPath: string };
  /** Spillway's RateLimit fields in response_headers_to_add. */
  responseHeaders: boolean;
}

/** The flags, for node:util parseArgs. */
export const RLS_FLAG_OPTIONS = {
  "rls-port": { type: "string" },
  "rls-host": { type: "string" },
  "rls-config": { type: "string" },
  "rls-tls-cert": { type: "string" },
  "rls-tls-key": { type: "string" },
  "rls-response-headers": { type: "boolean" },
} as const;

export const RLS_USAGE = `  --rls-port N           also answer Envoy's rate limit service (gRPC) on this port
                         (needs @grpc/grpc-js and @grpc/proto-loader: npm install @grpc/grpc-js @grpc/proto-loader)
  --rls-host ADDR        the address the gRPC port binds (default: --host; 0.0.0.0 for an Envoy on another host)
  --rls-config PATH      envoyproxy/ratelimit config: a YAML or JSON file or a directory of them
  --rls-tls-cert FILE    PEM certificate chain: the gRPC port speaks TLS (with --rls-tls-key)
  --rls-tls-key FILE     PEM private key of --rls-tls-cert
  --rls-response-headers add the RateLimit-Policy / RateLimit fields to Envoy's responses`;

interface RlsFlagValues {
  "rls-port"?: string;
  "rls-host"?: string;
  "rls-config"?: string;
  "rls-tls-cert"?: string;
  "rls-tls-key"?: string;
  "rls-response-headers"?: boolean;
}

/** The RLS flags, all or none: `--rls-port` and `--rls-config` go together, and so do the TLS pair. */
export function parseRlsArgs(values: RlsFlagValues): { rls?: RlsArgs } {
  const port = values["rls-port"];
  const configPath = values["rls-config"];
  const given = Object.entries(values).filter(([name, value]) => name.startsWith("rls-") && value !== undefined);
  if (port === undefined && configPath === undefined) {
    if (given.length > 0) throw new ValidationError(`--${given[0]![0]}`, "needs --rls-port and --rls-config");
    return {};
  }
  if (port === undefined) throw new ValidationError("--rls-port", "is required with --rls-config: the port Envoy's gRPC calls reach");
  if (configPath === undefined || configPath === "") throw new ValidationError("--rls-config", "is required with --rls-port: a YAML or JSON file, or a directory of them");
  const number = Number(port);
  if (!/^\d+$/.test(port) || number > 65535) throw new ValidationError("--rls-port", `must be an integer from 0 to 65535, got ${JSON.stringify(port)}`);
  const cert = values["rls-tls-cert"];
  const key = values["rls-tls-key"];
  if ((cert === undefined) !== (key === undefined)) throw new ValidationError(cert === undefined ? "--rls-tls-cert" : "--rls-tls-key", "is required: TLS needs both --rls-tls-cert and --rls-tls-key");
  const rls: RlsArgs = { port: number, configPath, responseHeaders: values["rls-response-headers"] ?? false };
  const host = values["rls-host"];
  if (host !== undefined) {
    if (host === "") throw new ValidationError("--rls-host", "must be an address (127.0.0.1, 0.0.0.0, ::), got an empty string");
    rls.hostname = host;
  }
  if (cert !== undefined && key !== undefined) rls.tls = { certPath: cert, keyPath: key };
  return { rls };
}
