import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { startRlsCommand } from "../../../../src/node/grpc/command.js";
import { parseRlsEnv } from "../../../../src/node/grpc/env.js";

/** Every variable Envoy Gateway sets on its rate limit deployment with its default telemetry (no TLS). */
const envoyGatewayEnv = (data: string, mapperPath: string) => ({
  RUNTIME_ROOT: data,
  RUNTIME_SUBDIRECTORY: "ratelimit",
  RUNTIME_IGNOREDOTFILES: "true",
  RUNTIME_WATCH_ROOT: "false",
  LOG_LEVEL: "info",
  USE_STATSD: "false",
  CONFIG_TYPE: "GRPC_XDS_SOTW",
  CONFIG_GRPC_XDS_SERVER_URL: "envoy-gateway.envoy-gateway-system.svc.cluster.local:18001",
  CONFIG_GRPC_XDS_NODE_ID: "envoy-ratelimit",
  FORCE_START_WITHOUT_INITIAL_CONFIG: "true",
  REDIS_SOCKET_TYPE: "tcp",
  REDIS_URL: "redis.redis-system.svc.cluster.local:6379",
  USE_PROMETHEUS: "true",
  PROMETHEUS_ADDR: ":19001",
  PROMETHEUS_MAPPER_YAML: mapperPath,
});

describe("spillway rls under Envoy Gateway's environment, its Prometheus telemetry on", () => {
  let data: string;
  beforeAll(async () => {
    data = await mkdtemp(join(tmpdir(), "spillway-eg-"));
    await mkdir(join(data, "ratelimit"));
  });

  it("accepts the whole set: xDS from the controller, Redis over TCP, metrics on :19001 with the mapping file", () => {
    const { settings, ignored } = parseRlsEnv(envoyGatewayEnv(data, "/etc/statsd-exporter/conf.yaml"));
    expect(ignored).toEqual([]);
    expect(settings.stats).toEqual({ enabled: true, nearLimitRatio: 0.8, prometheus: { host: "0.0.0.0", port: 19001, path: "/metrics", mapperYamlPath: "/etc/statsd-exporter/conf.yaml" } });
    expect(settings.xds).toMatchObject({ serverUrl: "envoy-gateway.envoy-gateway-system.svc.cluster.local:18001", nodeId: "envoy-ratelimit", forceStart: true });
    expect(settings.redis).toMatchObject({ type: "single", nodes: [{ host: "redis.redis-system.svc.cluster.local", port: 6379 }] });
    expect(settings.runtime).toMatchObject({ root: data, subdirectory: "ratelimit", ignoreDotFiles: true, watchRoot: false });
    expect(settings.log.level).toBe("info");
    expect(settings.grpc.tls).toBeUndefined();
  });

  it("reads the mapping file before connecting to anything: a malformed one stops startup naming PROMETHEUS_MAPPER_YAML", async () => {
    const path = join(data, "conf.yaml");
    await writeFile(path, "mappings:\n  - name: ratelimit_service_rate_limit_total_hits\n");
    const lines: string[] = [];
    const error = await startRlsCommand(envoyGatewayEnv(data, path), { write: (line) => lines.push(line) }).catch((caught: Error) => caught);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(`PROMETHEUS_MAPPER_YAML: ${path}: mappings[0].match is required: a glob such as ratelimit.service.rate_limit.*.*.total_hits, or a regex with match_type: regex`);
    expect(lines).toEqual([]);
  });
});
