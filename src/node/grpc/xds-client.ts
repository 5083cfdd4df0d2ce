import { readFile } from "node:fs/promises";
import { rootCertificates } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { ValidationError } from "../../core/validation.js";
import { parseRlsConfig } from "../../rls/config.js";
import type { RlsConfig } from "../../rls/types.js";
import { RATE_LIMIT_CONFIG_TYPE_URL, rateLimitConfigFile } from "../../rls/xds-resource.js";
import type { XdsSettings } from "./xds-env.js";
import { type DiscoveryRequest, type DiscoveryResponse, loadXdsProtos } from "./xds-protos.js";

/** The config the xDS server pushes, while `spillway rls` runs. */
export interface XdsConfigSource {
  /** Resolves with the first config applied (the reference waits for it unless FORCE_START_WITHOUT_INITIAL_CONFIG). */
  readonly first: Promise<RlsConfig>;
  /** The config in force; undefined until the first arrives. */
  current(): RlsConfig | undefined;
  /** The version_info last ACKed ("" before any). */
  version(): string;
  /** Ends the stream and stops reconnecting. */
  close(): void;
}

export interface XdsLog {
  info(line: string): void;
  warn(line: string): void;
  error(line: string): void;
}

/** google.rpc.Code INVALID_ARGUMENT: a NACK's error_detail says the config was refused for what it holds. */
const INVALID_ARGUMENT = 3;

/**
 * A State-of-the-World client of the aggregated discovery service, for the one type the
 * reference asks for (`RateLimitConfig`). Each response is the whole config: every resource is
 * read and parsed into one RlsConfig, which `apply` swaps in at once (a request reads the config
 * in force when it starts, so none sees half of an update); the response is then ACKed
 * (version_info and response_nonce). A response with any resource that cannot be read or parsed is
 * NACKed with the reason (error_detail) and the version it had, keeping its config. When the
 * stream ends or the server cannot be reached, it connects again after the retry interval, the
 * last config still served; the new stream names the version it holds.
 *
 * The TLS files are read here, before anything connects: a missing one is a ValidationError naming its variable.
 */
export async function startXdsConfig(settings: XdsSettings, options: { apply(config: RlsConfig, version: string): void; log: XdsLog }): Promise<XdsConfigSource> {
  const { AggregatedDiscoveryService } = loadXdsProtos();
  const credentials = await channelCredentials(settings);
  const channelOptions: grpc.ChannelOptions = { "grpc.enable_channelz": 0 };
  if (settings.maxMessageBytes !== undefined) channelOptions["grpc.max_receive_message_length"] = settings.maxMessageBytes;
  if (settings.tls?.serverName) channelOptions["grpc.ssl_target_name_override"] = settings.tls.serverName;
  const node: DiscoveryRequest["node"] = {
    id: settings.nodeId,
    metadata: { fields: Object.fromEntries(Object.entries(settings.nodeMetadata).map(([key, value]) => [key, { stringValue: value }])) },
  };
  const { log } = options;

  let config: RlsConfig | undefined;
  let version = "";
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let client: grpc.Client | undefined;
  let resolveFirst!: (config: RlsConfig) => void;
  const first = new Promise<RlsConfig>((resolve) => (resolveFirst = resolve));

  const connect = () => {
    retry = undefined;
    if (stopped) return;
    const metadata = new grpc.Metadata();
    for (const [name, value] of Object.entries(settings.headers)) metadata.set(name, value);
    // A new channel each time, as the reference dials again: grpc-js's own reconnect backoff would outgrow the interval.
    const ads = new AggregatedDiscoveryService(settings.serverUrl, credentials, channelOptions);
    client = ads;
    const call = (ads as unknown as { StreamAggregatedResources(metadata: grpc.Metadata): grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse> }).StreamAggregatedResources(metadata);
    let ended = false;
    let answered = false;
    const end = (why: string) => {
      if (ended) return;
      ended = true;
      ads.close();
      if (stopped) return;
      log.warn(`xDS stream to ${settings.serverUrl} ${answered ? "ended" : "failed"} (${why}): connecting again in ${settings.retryIntervalMs} ms; ${config ? `version ${JSON.stringify(version)} stays in force` : "no config yet"}`);
      retry = setTimeout(connect, settings.retryIntervalMs);
      retry.unref();
    };
    call.on("data", (response: DiscoveryResponse) => {
      if (!answered) log.info(`xDS stream to ${settings.serverUrl} open (node ${JSON.stringify(settings.nodeId)})`);
      answered = true;
      const refused = take(response);
      const request: DiscoveryRequest = { version_info: version, node, type_url: RATE_LIMIT_CONFIG_TYPE_URL, response_nonce: response.nonce ?? "" };
      if (refused) request.error_detail = { code: INVALID_ARGUMENT, message: refused };
      call.write(request);
    });
    call.on("error", (error: grpc.ServiceError) => end(error.details || error.message));
    call.on("end", () => end("closed by the server"));
    call.write({ version_info: version, node, type_url: RATE_LIMIT_CONFIG_TYPE_URL, response_nonce: "" } satisfies DiscoveryRequest);
  };

  /** Applies one response; returns why it was refused, or undefined when it is in force. */
  const take = (response: DiscoveryResponse): string | undefined => {
    const offered = response.version_info ?? "";
    let next: RlsConfig;
    try {
      if (response.type_url !== undefined && response.type_url !== RATE_LIMIT_CONFIG_TYPE_URL) throw new ValidationError("type_url", `is ${JSON.stringify(response.type_url)}, not ${RATE_LIMIT_CONFIG_TYPE_URL}`);
      const files = (response.resources ?? []).map((resource, index) => {
        if (resource.type_url !== RATE_LIMIT_CONFIG_TYPE_URL) throw new ValidationError(`xDS resource ${index}`, `is a ${JSON.stringify(resource.type_url ?? "")}, not a ${RATE_LIMIT_CONFIG_TYPE_URL}`);
        return rateLimitConfigFile(resource.value ?? new Uint8Array(), index);
      });
      next = parseRlsConfig(files);
    } catch (error) {
      const reason = (error as Error).message;
      log.error(`xDS config version ${JSON.stringify(offered)} refused (NACK), ${config ? `version ${JSON.stringify(version)} stays in force` : "still no config"}: ${reason}`);
      return reason;
    }
    config = next;
    version = offered;
    options.apply(next, offered);
    log.info(`xDS config version ${JSON.stringify(offered)} applied (${next.domains.size} domain(s))`);
    resolveFirst(next);
    return undefined;
  };

  connect();
  return {
    first,
    current: () => config,
    version: () => version,
    close() {
      stopped = true;
      clearTimeout(retry);
      client?.close();
    },
  };
}

async function channelCredentials(settings: XdsSettings): Promise<grpc.ChannelCredentials> {
  const tls = settings.tls;
  if (!tls) return grpc.credentials.createInsecure();
  const read = async (path: string | undefined, name: string) => {
    if (!path) return undefined;
    try {
      return await readFile(path);
    } catch (error) {
      throw new ValidationError(name, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  };
  const ca = await read(tls.caPath, "CONFIG_GRPC_XDS_SERVER_TLS_CACERT");
  const cert = await read(tls.certPath, "CONFIG_GRPC_XDS_CLIENT_TLS_CERT");
  const key = await read(tls.keyPath, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY");
  // As the reference's pool: the usual roots, and the given CA beside them.
  const roots = ca ? Buffer.concat([Buffer.from(`${rootCertificates.join("\n")}\n`), ca]) : null;
  try {
    return grpc.credentials.createSsl(roots, key ?? null, cert ?? null);
  } catch (error) {
    throw new ValidationError(ca ? "CONFIG_GRPC_XDS_SERVER_TLS_CACERT" : "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", `is not usable PEM: ${(error as Error).message}`);
  }
}
