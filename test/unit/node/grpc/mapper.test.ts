import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRlsConfig } from "../../../../src/node/grpc/files.js";
import { loadStatsdMapper, parseStatsdMapper } from "../../../../src/node/grpc/mapper.js";
import { registerRlsMetrics } from "../../../../src/node/grpc/metrics.js";
import { type RunningRlsServer, startRlsServer } from "../../../../src/node/grpc/server.js";
import { RlsStats } from "../../../../src/rls/stats.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { type RlsClient, configDir, d, rlsClient } from "./rls-helpers.js";

const STATS = ["near_limit", "over_limit", "total_hits", "within_limit", "shadow_mode"];
/** Envoy Gateway's statsd-exporter mapping: domain and key1 for two levels, key1 and key2 for three. */
const ENVOY_GATEWAY_MAPPING = `mappings:\n${STATS.map(
  (stat) => `  - match: "ratelimit.service.rate_limit.*.*.${stat}"
    name: "ratelimit_service_rate_limit_${stat}"
    timer_type: "histogram"
    labels:
      domain: "$1"
      key1: "$2"
  - match: "ratelimit.service.rate_limit.*.*.*.${stat}"
    name: "ratelimit_service_rate_limit_${stat}"
    timer_type: "histogram"
    labels:
      domain: "$1"
      key1: "$2"
      key2: "$3"
`,
).join("")}  - match: "ratelimit.service.call.should_rate_limit.*"
    name: "ratelimit_service_should_rate_limit_error"
    match_metric_type: counter
    labels:
      err_type: "$1"
`;

const CONFIG = `domain: gw
descriptors:
  - key: generic_key
    value: default
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: route
    value: default/r1
    descriptors:
      - key: user
        rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: shadowed
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 0 }
`;

const scrape = async (registry: Registry) => (await registry.metrics()).split("\n").filter((line) => line && !line.startsWith("#"));

describe("spillway rls: PROMETHEUS_MAPPER_YAML maps the reference's statsd names as statsd_exporter does", () => {
  let server: RunningRlsServer;
  let client: RlsClient;
  let dir: string;
  const stats = new RlsStats();
  const plain = new Registry();
  const registries: Record<string, Registry> = {};

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "spillway-mapper-"));
    server = await startRlsServer({ limiter: new MemoryStore(), config: await loadRlsConfig(await configDir({ "gw.yaml": CONFIG })), port: 0, stats });
    client = rlsClient(server.address);
    registerRlsMetrics(plain, stats);
    // One registry per mapping, each on the same counts; the first registered before any series exists, the others after.
    await writeFile(join(dir, "eg.yaml"), ENVOY_GATEWAY_MAPPING);
    registries.eg = new Registry();
    registerRlsMetrics(registries.eg, stats, await loadStatsdMapper(join(dir, "eg.yaml"), () => {}));
    for (let i = 0; i < 3; i++) await client.ask("gw", [d(["generic_key", "default"])]);
    for (let i = 0; i < 2; i++) await client.ask("gw", [d(["route", "default/r1"], ["user", "ann"])]);
    await client.ask("gw", [d(["shadowed", "x"])]);
  });

  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it("Envoy Gateway's mapping: domain and key1 (two levels), key1 and key2 (three), for every stat, the same counts as the default names", async () => {
    const lines = await scrape(registries.eg!);
    const expected = (await scrape(plain)).map((line) =>
      line.replace(/key="([^".]*)\.([^"]*)"/, 'key1="$1",key2="$2"').replace(/key="([^"]*)"/, 'key1="$1"'),
    );
    expect(expected).toContain('ratelimit_service_rate_limit_total_hits{domain="gw",key1="generic_key_default"} 3');
    expect(expected).toContain('ratelimit_service_rate_limit_over_limit{domain="gw",key1="route_default/r1",key2="user"} 1');
    expect(expected).toContain('ratelimit_service_rate_limit_shadow_mode{domain="gw",key1="shadowed"} 1');
    expect(expected.filter((line) => line.includes("near_limit"))).toHaveLength(3);
    expect(lines.sort()).toEqual(expected.sort());
  });

  it("action: drop exports nothing, globs win over an earlier regex, captures fill regex names, and what no mapping matches keeps its escaped statsd name without labels", async () => {
    const registry = new Registry();
    const mapper = parseStatsdMapper(
      `mappings:
  - match: 'ratelimit\\.service\\.rate_limit\\.(\\w+)\\.(generic_key)_(\\w+)\\.total_hits'
    match_type: regex
    name: "regex_\${2}_hits"
    labels: { domain: "$1", value: "$3" }
  - match: "ratelimit.service.rate_limit.gw.generic_key_*.total_hits"
    name: "glob_hits"
    help: "Hits per generic key."
    labels: { generic: "$1" }
  - match: "ratelimit.service.rate_limit.*.route_*.*.total_hits"
    action: drop
  - match: 'ratelimit\\.service\\.rate_limit\\.gw\\.route_default/r1\\.(\\w+)\\.(\\w+)'
    match_type: regex
    name: "route_$2"
    labels: { key: "$1" }
  - match: "ratelimit.service.rate_limit.*.*.*"
    match_metric_type: gauge
    name: never_a_counter
  - match: "ratelimit.service.rate_limit.*.*.shadow_mode"
    action: drop
`,
      "inline.yaml",
    );
    registerRlsMetrics(registry, stats, mapper);
    const lines = await scrape(registry);
    expect(lines).toContain('glob_hits{generic="default"} 3');
    expect(await registry.metrics()).toContain("# HELP glob_hits Hits per generic key.");
    expect(lines).toContain('route_over_limit{key="user"} 1');
    expect(lines).toContain('route_within_limit{key="user"} 1');
    expect(lines).toContain("ratelimit_service_rate_limit_gw_generic_key_default_over_limit 1");
    expect(lines).toContain("ratelimit_service_rate_limit_gw_shadowed_over_limit 1");
    expect(lines.join("\n")).not.toMatch(/regex_|route_total_hits|never_a_counter|generic_key_default_shadow_mode|shadowed_shadow_mode/);
  });

  it("a missing file (Envoy Gateway's optional ConfigMap) maps nothing, as the reference, and says so", async () => {
    const registry = new Registry();
    const warnings: string[] = [];
    registerRlsMetrics(registry, stats, await loadStatsdMapper(join(dir, "absent.yaml"), (line) => warnings.push(line)));
    expect(warnings).toEqual([expect.stringMatching(/^PROMETHEUS_MAPPER_YAML: .*absent\.yaml does not exist: no mapping applies/)]);
    const lines = await scrape(registry);
    expect(lines).toContain("ratelimit_service_rate_limit_gw_generic_key_default_total_hits 3");
    expect(lines).toContain("ratelimit_service_rate_limit_gw_route_default_r1_user_over_limit 1");
    expect(lines.every((line) => !line.includes("{"))).toBe(true);
  });

  it("takes a field set to \"\" or null as its default, as statsd_exporter does (configs marshalled from its Go struct)", () => {
    const mapper = parseStatsdMapper(
      'mappings:\n  - match: "ratelimit.service.rate_limit.*.*.total_hits"\n    name: hits\n    match_type: ""\n    action: ""\n    match_metric_type: ""\n    help: null\n    labels: { domain: "$1" }\n',
      "marshalled.yaml",
    );
    expect(mapper.map("ratelimit.service.rate_limit.gw.user.total_hits")).toEqual({ name: "hits", labels: { domain: "gw" } });
    expect(mapper.map("ratelimit.service.rate_limit.gw.user.a.total_hits")).toEqual({ name: "ratelimit_service_rate_limit_gw_user_a_total_hits", labels: {} });
  });

  it.each([
    ["mappings: [", /^PROMETHEUS_MAPPER_YAML: bad\.yaml is not valid YAML: /],
    ["mappings: { match: a }", /^PROMETHEUS_MAPPER_YAML: bad\.yaml: mappings must be a list$/],
    ["mappings:\n  - match: a.b\n    name: ok\n  - name: no_match", /^PROMETHEUS_MAPPER_YAML: bad\.yaml: mappings\[1\]\.match is required/],
    ["mappings:\n  - match: a.b", /^PROMETHEUS_MAPPER_YAML: bad\.yaml: mappings\[0\]\.name is required/],
    ["mappings:\n  - match: 'a(b'\n    match_type: regex\n    name: x", /^PROMETHEUS_MAPPER_YAML: bad\.yaml: mappings\[0\]\.match: /],
    ["mappings:\n  - match: 'a b.*'\n    name: x", /^PROMETHEUS_MAPPER_YAML: bad\.yaml: mappings\[0\]\.match: "a b\.\*" is not a glob/],
    ["mappings:\n  - match: a.*\n    name: x\n    action: keep", /^PROMETHEUS_MAPPER_YAML: bad\.yaml: mappings\[0\]\.action must be map or drop/],
    ["mappings:\n  - match: a.*\n    name: x\n    labels: { 1bad: $1 }", /^PROMETHEUS_MAPPER_YAML: bad\.yaml: mappings\[0\]\.labels: "1bad" is not a Prometheus label name/],
    ["mappings:\n  - match: a.*\n    name: x\n    match_type: fuzzy", /^PROMETHEUS_MAPPER_YAML: bad\.yaml: mappings\[0\]\.match_type must be glob or regex/],
  ])("a malformed file stops startup naming the variable and the mapping: %j", async (text, message) => {
    await writeFile(join(dir, "bad.yaml"), text);
    const error = await loadStatsdMapper(join(dir, "bad.yaml"), () => {}).catch((caught: Error) => caught);
    expect((error as Error).message.replace(dir + "/", "")).toMatch(message);
  });
});
