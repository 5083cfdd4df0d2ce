import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { RLS_PROTO_OPTIONS } from "./server.js";

/** The published protos of the aggregated discovery service and of the reference's RateLimitConfig (proto/). */
export const XDS_PROTO_FILES = ["envoy/service/discovery/v3/ads.proto", "ratelimit/config/ratelimit/v3/rls_conf.proto"];

/**
 * `envoy.service.discovery.v3.AggregatedDiscoveryService`, loaded with rls_conf.proto in the
 * same root (so a server may write a resource as `{ "@type": RATE_LIMIT_CONFIG_TYPE_URL, ... }`,
 * as the tests' xDS server does). The client reads each resource's bytes itself
 * (src/rls/xds-resource.ts), so a resource it cannot read is NACKed, not a broken stream.
 */
export function loadXdsProtos(): { AggregatedDiscoveryService: grpc.ServiceClientConstructor } {
  // Parsed once per process: a reconnect, or a second client, reuses it.
  if (loaded) return loaded;
  const definition = protoLoader.loadSync(XDS_PROTO_FILES, RLS_PROTO_OPTIONS);
  const packages = grpc.loadPackageDefinition(definition) as unknown as { envoy: { service: { discovery: { v3: { AggregatedDiscoveryService: grpc.ServiceClientConstructor } } } } };
  loaded = { AggregatedDiscoveryService: packages.envoy.service.discovery.v3.AggregatedDiscoveryService };
  return loaded;
}

let loaded: { AggregatedDiscoveryService: grpc.ServiceClientConstructor } | undefined;

/** DiscoveryRequest and DiscoveryResponse as proto-loader reads them under RLS_PROTO_OPTIONS. */
export interface DiscoveryRequest {
  version_info?: string;
  node?: { id: string; metadata?: { fields: Record<string, { stringValue: string }> } };
  resource_names?: string[];
  type_url: string;
  response_nonce?: string;
  error_detail?: { code: number; message: string };
}

export interface DiscoveryResponse {
  version_info?: string;
  resources?: { type_url?: string; value?: Buffer }[];
  type_url?: string;
  nonce?: string;
}
