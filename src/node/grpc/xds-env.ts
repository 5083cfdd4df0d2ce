import { ValidationError } from "../../core/validation.js";

/**
 * `CONFIG_TYPE=GRPC_XDS_SOTW`: the limits come from an xDS management server (Envoy Gateway's
 * controller, on port 18001 there) as `RateLimitConfig` resources, read by the reference's
 * variables (envoyproxy/ratelimit's settings.go; defaults as there). xds-client.ts acts on them.
 */
export interface XdsSettings {
  /** CONFIG_GRPC_XDS_SERVER_URL: a gRPC target, host:port (default localhost:18000). */
  serverUrl: string;
  /** CONFIG_GRPC_XDS_NODE_ID (default "default"): the node the server keeps a snapshot for. */
  nodeId: string;
  /** CONFIG_GRPC_XDS_NODE_METADATA: `key=value,key=value`, sent as the node's metadata (string values). */
  nodeMetadata: Record<string, string>;
  /** CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL (default 3s): the wait before connecting again. */
  retryIntervalMs: number;
  /** CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: `name:value,name:value`, gRPC metadata on the stream. */
  headers: Record<string, string>;
  /** CONFIG_GRPC_XDS_SERVER_USE_TLS and the files: TLS to the server, a client certificate for mutual TLS. */
  tls?: { certPath?: string; keyPath?: string; caPath?: string; serverName?: string };
  /** XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES: the largest response taken (unset: gRPC's 4 MiB). */
  maxMessageBytes?: number;
  /** FORCE_START_WITHOUT_INITIAL_CONFIG: serve before the first config (every call UNAVAILABLE until then). */
  forceStart: boolean;
}

export type ParseFlag = (name: string, fallback: boolean) => boolean;
export type ParseDuration = (name: string, fallbackMs: number) => number;

/** The xDS variables; undefined unless CONFIG_TYPE asks for xDS (FILE, the default, reads the runtime directory). */
export function parseXdsEnv(env: Record<string, string | undefined>, flag: ParseFlag, duration: ParseDuration): XdsSettings | undefined {
  const type = (env.CONFIG_TYPE ?? "").trim().toUpperCase();
  if (type === "" || type === "FILE") return undefined;
  if (type !== "GRPC_XDS_SOTW") throw new ValidationError("CONFIG_TYPE", `must be FILE (the runtime directory) or GRPC_XDS_SOTW (an xDS server), got ${JSON.stringify(env.CONFIG_TYPE)}`);
  const retryIntervalMs = duration("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", 3000);
  if (retryIntervalMs < 1) throw new ValidationError("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", `must be at least 1ms, got ${JSON.stringify(env.CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL)}`);
  const settings: XdsSettings = {
    serverUrl: serverTarget(env.CONFIG_GRPC_XDS_SERVER_URL ?? "localhost:18000"),
    nodeId: env.CONFIG_GRPC_XDS_NODE_ID || "default",
    nodeMetadata: pairs("CONFIG_GRPC_XDS_NODE_METADATA", env.CONFIG_GRPC_XDS_NODE_METADATA, "=", "key=value,key=value"),
    retryIntervalMs,
    headers: headers(env.CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS),
    forceStart: flag("FORCE_START_WITHOUT_INITIAL_CONFIG", false),
  };
  const size = env.XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES;
  if (size !== undefined && size !== "") {
    if (!/^\d+$/.test(size) || Number(size) < 1 || Number(size) > 2 ** 31 - 1) throw new ValidationError("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", `must be a whole number of bytes from 1 to 2147483647, got ${JSON.stringify(size)}`);
    settings.maxMessageBytes = Number(size);
  }
  if (flag("CONFIG_GRPC_XDS_SERVER_USE_TLS", false)) {
    const certPath = env.CONFIG_GRPC_XDS_CLIENT_TLS_CERT || undefined;
    const keyPath = env.CONFIG_GRPC_XDS_CLIENT_TLS_KEY || undefined;
    if ((certPath === undefined) !== (keyPath === undefined)) {
      throw new ValidationError(certPath ? "CONFIG_GRPC_XDS_CLIENT_TLS_KEY" : "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "is required: a client certificate needs both CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY");
    }
    settings.tls = {
      ...(certPath && keyPath ? { certPath, keyPath } : {}),
      ...(env.CONFIG_GRPC_XDS_SERVER_TLS_CACERT ? { caPath: env.CONFIG_GRPC_XDS_SERVER_TLS_CACERT } : {}),
      ...(env.CONFIG_GRPC_XDS_SERVER_TLS_SAN ? { serverName: env.CONFIG_GRPC_XDS_SERVER_TLS_SAN } : {}),
    };
  }
  return settings;
}

/** A gRPC target as Go's grpc.Dial takes it: host:port, or with a resolver (dns:, unix:, ipv4:, ipv6:); never an http URL. */
function serverTarget(text: string): string {
  const target = text.trim();
  if (/^https?:\/\//i.test(target)) throw new ValidationError("CONFIG_GRPC_XDS_SERVER_URL", `must be host:port (a gRPC target, TLS by CONFIG_GRPC_XDS_SERVER_USE_TLS), not a URL, got ${JSON.stringify(text)}`);
  if (/^(dns|unix|unix-abstract|ipv4|ipv6):/.test(target) && target.length > 5) return target;
  const match = /^(\[[^\]]+\]|[^:/\s]+):(\d{1,5})$/.exec(target);
  if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) throw new ValidationError("CONFIG_GRPC_XDS_SERVER_URL", `must be host:port of the xDS server (Envoy Gateway sets envoy-gateway:18001), got ${JSON.stringify(text)}`);
  return target;
}

/** `a=1,b=2` (or `a:1,b:2`): every item must hold the separator; empty items are skipped. */
function pairs(name: string, text: string | undefined, separator: string, shape: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of (text ?? "").split(",")) {
    if (item.trim() === "") continue;
    const at = item.indexOf(separator);
    if (at <= 0) throw new ValidationError(name, `must be ${shape}: ${JSON.stringify(item)} has no ${JSON.stringify(separator)} after a name`);
    out[item.slice(0, at).trim()] = item.slice(at + 1);
  }
  return out;
}

/** `name:value,...` as the reference's envconfig map reads it; names are gRPC metadata keys (lowercase, no grpc- prefix, no binary -bin). */
function headers(text: string | undefined): Record<string, string> {
  const name = "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS";
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(pairs(name, text, ":", "name:value,name:value"))) {
    const lower = key.toLowerCase();
    if (!/^[0-9a-z_.-]+$/.test(lower) || lower.startsWith("grpc-") || lower.endsWith("-bin")) throw new ValidationError(name, `${JSON.stringify(key)} is not a header gRPC can send (letters, digits, - _ .; not grpc-*, not -bin)`);
    if (/[^\x20-\x7e]/.test(value)) throw new ValidationError(name, `the value of ${JSON.stringify(key)} must be printable ASCII`);
    out[lower] = value;
  }
  return out;
}
