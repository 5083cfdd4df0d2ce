import * as grpc from "@grpc/grpc-js";
import { parse as parseYaml } from "yaml";
import { type DiscoveryRequest, type DiscoveryResponse, loadXdsProtos } from "../../../../src/node/grpc/xds-protos.js";
import { RATE_LIMIT_CONFIG_TYPE_URL } from "../../../../src/rls/xds-resource.js";

/** A RateLimitConfig as proto-loader writes it (the published rls_conf.proto's field names). */
export interface RateLimitConfigMessage {
  name: string;
  domain: string;
  descriptors?: unknown[];
}

/** One resource on the wire: a RateLimitConfig (packed in an Any by protobufjs from rls_conf.proto), or raw Any bytes. */
export type XdsResource = RateLimitConfigMessage | { type_url: string; value: Buffer };

/**
 * An xDS management server for the tests, speaking the aggregated discovery service from the
 * published protos (grpc-js and proto-loader, the same files a Go control plane is built from):
 * it keeps a snapshot (version and resources), sends it on every new stream and on every
 * push, each response with a fresh nonce, and records every DiscoveryRequest it gets.
 */
export class TestXdsServer {
  readonly requests: DiscoveryRequest[] = [];
  /** Additional headers (gRPC metadata) of every stream opened. */
  readonly streamHeaders: Record<string, string>[] = [];
  port = 0;
  private server?: grpc.Server;
  private streams = new Set<grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>>();
  private snapshot?: { version: string; resources: XdsResource[] };
  private nonce = 0;
  private waiters: { test: (request: DiscoveryRequest) => boolean; resolve: (request: DiscoveryRequest) => void }[] = [];

  async start(port = this.port, credentials = grpc.ServerCredentials.createInsecure()): Promise<this> {
    const { AggregatedDiscoveryService } = loadXdsProtos();
    const server = new grpc.Server();
    server.addService(AggregatedDiscoveryService.service, {
      StreamAggregatedResources: (stream: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => {
        this.streams.add(stream);
        this.streamHeaders.push(Object.fromEntries(Object.entries(stream.metadata.getMap()).map(([key, value]) => [key, String(value)])));
        let first = true;
        stream.on("data", (request: DiscoveryRequest) => {
          this.requests.push(request);
          for (const waiter of [...this.waiters]) {
            if (!waiter.test(request)) continue;
            this.waiters.splice(this.waiters.indexOf(waiter), 1);
            waiter.resolve(request);
          }
          if (first && this.snapshot) this.send(stream);
          first = false;
        });
        stream.on("error", () => this.streams.delete(stream));
        stream.on("end", () => (this.streams.delete(stream), stream.end()));
      },
    });
    this.port = await new Promise<number>((resolve, reject) => server.bindAsync(`127.0.0.1:${port}`, credentials, (error, bound) => (error ? reject(error) : resolve(bound))));
    this.server = server;
    return this;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Sets the snapshot and sends it on every open stream; answers the nonce it was sent with. */
  push(version: string, resources: XdsResource[]): string {
    this.snapshot = { version, resources };
    for (const stream of this.streams) this.send(stream);
    return String(this.nonce);
  }

  /** The next request (from now on) that `test` accepts. */
  next(test: (request: DiscoveryRequest) => boolean = () => true, timeoutMs = 10_000): Promise<DiscoveryRequest> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no such DiscoveryRequest in time")), timeoutMs);
      this.waiters.push({ test, resolve: (request) => (clearTimeout(timer), resolve(request)) });
    });
  }

  /** Gone at once, as a crashed or redeployed controller: streams are cut, the port closed. */
  stop(): void {
    this.server?.forceShutdown();
    this.streams.clear();
    this.server = undefined;
  }

  private send(stream: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>): void {
    const { version, resources } = this.snapshot!;
    this.nonce++;
    stream.write({ version_info: version, type_url: RATE_LIMIT_CONFIG_TYPE_URL, nonce: String(this.nonce), resources: resources.map(anyOf) as DiscoveryResponse["resources"] });
  }
}

function anyOf(resource: XdsResource): unknown {
  if ("type_url" in resource) return resource;
  // protobufjs packs `@type` objects into an Any from the types loaded beside it (rls_conf.proto).
  return { "@type": RATE_LIMIT_CONFIG_TYPE_URL, ...resource };
}

/**
 * A config file's YAML as the RateLimitConfig an xDS server would send for it (what Envoy
 * Gateway builds from a BackendTrafficPolicy): the reference's fields only. A field the proto
 * does not carry (Spillway's extensions, share_threshold) is an error here, not dropped.
 */
export function rateLimitConfigOf(name: string, yaml: string): RateLimitConfigMessage {
  const root = parseYaml(yaml) as { domain: string; descriptors?: unknown[]; [field: string]: unknown };
  for (const field of Object.keys(root)) if (field !== "domain" && field !== "descriptors") throw new Error(`${name}: ${field} has no place in a RateLimitConfig`);
  return { name, domain: root.domain, descriptors: (root.descriptors ?? []).map((item) => descriptorOf(item as Record<string, unknown>, name)) };
}

const DESCRIPTOR_FIELDS = new Set(["key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric", "quota_mode", "metadata"]);
const POLICY_FIELDS = new Set(["unit", "requests_per_unit", "unlimited", "name", "replaces"]);

function descriptorOf(item: Record<string, unknown>, name: string): Record<string, unknown> {
  for (const field of Object.keys(item)) if (!DESCRIPTOR_FIELDS.has(field)) throw new Error(`${name}: ${field} has no place in a RateLimitDescriptor`);
  const out: Record<string, unknown> = { ...item };
  if (item.value !== undefined) out.value = String(item.value);
  if (item.descriptors) out.descriptors = (item.descriptors as Record<string, unknown>[]).map((child) => descriptorOf(child, name));
  if (item.metadata) out.metadata = structOf(item.metadata as Record<string, unknown>);
  const rateLimit = item.rate_limit as Record<string, unknown> | undefined;
  if (rateLimit) {
    for (const field of Object.keys(rateLimit)) if (!POLICY_FIELDS.has(field)) throw new Error(`${name}: ${field} has no place in a RateLimitPolicy`);
    out.rate_limit = { ...rateLimit, ...(rateLimit.unit ? { unit: String(rateLimit.unit).toUpperCase() } : {}) };
  }
  return out;
}

/** A plain mapping as google.protobuf.Struct (protobufjs's own struct.proto names its fields in camelCase). */
export function structOf(mapping: Record<string, unknown>): unknown {
  const value = (item: unknown): unknown => {
    if (item === null) return { nullValue: "NULL_VALUE" };
    if (typeof item === "number") return { numberValue: item };
    if (typeof item === "string") return { stringValue: item };
    if (typeof item === "boolean") return { boolValue: item };
    if (Array.isArray(item)) return { listValue: { values: item.map(value) } };
    return { structValue: structOf(item as Record<string, unknown>) };
  };
  return { fields: Object.fromEntries(Object.entries(mapping).map(([key, item]) => [key, value(item)])) };
}

/** A RateLimitConfig's bytes as protobufjs writes them from rls_conf.proto (what travels inside the Any). */
export function rateLimitConfigBytes(resource: RateLimitConfigMessage): Buffer {
  const method = (adsMethod ??= loadXdsProtos().AggregatedDiscoveryService.service.StreamAggregatedResources!);
  const response = method.responseDeserialize(method.responseSerialize({ resources: [anyOf(resource)] })) as DiscoveryResponse;
  return response.resources![0]!.value!;
}

let adsMethod: ReturnType<typeof loadXdsProtos>["AggregatedDiscoveryService"]["service"][string] | undefined;
