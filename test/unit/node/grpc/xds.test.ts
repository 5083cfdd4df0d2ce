import { afterEach, describe, expect, it } from "vitest";
import { type RunningRlsServer, startRlsServer } from "../../../../src/node/grpc/server.js";
import { type XdsConfigSource, startXdsConfig } from "../../../../src/node/grpc/xds-client.js";
import type { XdsSettings } from "../../../../src/node/grpc/xds-env.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { type RlsClient, d, rlsClient, unique } from "./rls-helpers.js";
import { type RateLimitConfigMessage, TestXdsServer, rateLimitConfigOf } from "./xds-server.js";

const TYPE_URL = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig";

/** One domain `app` whose `user` limit is `perHour` an hour, named so an answer says which push it came from. */
const app = (perHour: number, domain = "app"): RateLimitConfigMessage => ({
  name: `${domain}-${perHour}`,
  domain,
  descriptors: [{ key: "user", rate_limit: { unit: "HOUR", requests_per_unit: perHour, name: `${domain}-${perHour}` } }],
});

interface Setup {
  xds: TestXdsServer;
  server: RunningRlsServer;
  source: XdsConfigSource;
  client: RlsClient;
  lines: string[];
}

describe("spillway rls with CONFIG_TYPE=GRPC_XDS_SOTW, against an xDS server speaking the published protos", () => {
  const running: Setup[] = [];
  const servers: TestXdsServer[] = [];
  afterEach(async () => {
    for (const xds of servers.splice(0)) xds.stop();
    for (const one of running.splice(0)) {
      one.client.close();
      one.source.close();
      await one.server.close();
      one.xds.stop();
    }
  });

  /** The xDS client wired to the gRPC service as `spillway rls` wires them (command.ts), on the memory store. */
  async function setup(settings: Partial<XdsSettings> = {}, xds?: TestXdsServer): Promise<Setup> {
    xds ??= await new TestXdsServer().start();
    const server = await startRlsServer({ limiter: new MemoryStore(), config: { domains: new Map() }, port: 0, log: () => {} });
    const lines: string[] = [];
    const log = { info: (line: string) => lines.push(line), warn: (line: string) => lines.push(line), error: (line: string) => lines.push(line) };
    const source = await startXdsConfig(
      { serverUrl: xds.address, nodeId: "node-1", nodeMetadata: {}, retryIntervalMs: 50, headers: {}, forceStart: true, ...settings },
      { apply: (config) => server.setConfig(config), log },
    );
    const one = { xds, server, source, client: rlsClient(server.address), lines };
    running.push(one);
    return one;
  }

  const limitOf = async (client: RlsClient, domain = "app") => (await client.ask(domain, [d(["user", unique("u")])])).statuses[0]!.current_limit?.requests_per_unit;

  it("subscribes as the node it is, takes the initial push, ACKs it and serves it", async () => {
    const xds = await new TestXdsServer().start();
    const first = xds.next();
    const { client, source } = await setup({ nodeId: "envoy-gateway-ratelimit", nodeMetadata: { cluster: "eg", zone: "a" }, headers: { "x-tenant": "blue" } }, xds);
    expect(await first).toMatchObject({ version_info: "", response_nonce: "", type_url: TYPE_URL, node: { id: "envoy-gateway-ratelimit", metadata: { fields: { cluster: { stringValue: "eg" }, zone: { stringValue: "a" } } } } });
    expect(xds.streamHeaders[0]).toMatchObject({ "x-tenant": "blue" });
    const ack = xds.next((request) => request.response_nonce !== "");
    const nonce = xds.push("v1", [app(3)]);
    expect(await ack).toMatchObject({ version_info: "v1", response_nonce: nonce, type_url: TYPE_URL });
    expect((await ack).error_detail).toBeUndefined();
    expect((await source.first).domains.has("app")).toBe(true);
    const user = unique("u");
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await client.ask("app", [d(["user", user])])).overall_code);
    expect(answers).toEqual(["OK", "OK", "OK", "OVER_LIMIT"]);
  });

  it("applies an update, NACKs a bad push with the reason and keeps serving the config it had", async () => {
    const { xds, client, source, lines } = await setup();
    xds.push("v1", [app(3)]);
    await source.first;
    const ack = xds.next((request) => request.version_info === "v2");
    xds.push("v2", [app(7)]);
    await ack;
    expect(await limitOf(client)).toBe(7);

    const nack = xds.next((request) => request.error_detail !== undefined);
    const nonce = xds.push("v3", [{ name: "broken", domain: "app", descriptors: [{ key: "user", rate_limit: { requests_per_unit: 5 } }] }]);
    expect(await nack).toMatchObject({ version_info: "v2", response_nonce: nonce, error_detail: { code: 3, message: 'xDS resource "broken": descriptors.0.rate_limit.unit: is required (second, minute, hour or day), or Spillway\'s period' } });
    expect(await limitOf(client)).toBe(7);
    expect(source.version()).toBe("v2");
    expect(lines.some((line) => line.includes('version "v3" refused (NACK), version "v2" stays in force'))).toBe(true);

    // Bytes that are no RateLimitConfig, and a resource of another type: NACKed, not a broken stream.
    const garbage = xds.next((request) => request.error_detail !== undefined);
    xds.push("v4", [app(9), { type_url: TYPE_URL, value: Buffer.from([0xff, 0xff]) }]);
    expect((await garbage).error_detail!.message).toMatch(/^xDS resource 1: is not a RateLimitConfig/);
    const foreign = xds.next((request) => request.error_detail !== undefined);
    xds.push("v5", [{ type_url: "type.googleapis.com/envoy.config.cluster.v3.Cluster", value: Buffer.alloc(0) }]);
    expect((await foreign).error_detail!.message).toContain("not a type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig");
    // The same domain twice in one push is refused, as the reference refuses it without MERGE_DOMAIN_CONFIG.
    const twice = xds.next((request) => request.error_detail !== undefined);
    xds.push("v6", [app(1), { ...app(2), name: "app-again" }]);
    expect((await twice).error_detail!.message).toContain('"app" is already defined in xDS resource "app-1"');
    expect(await limitOf(client)).toBe(7);
    const fixed = xds.next((request) => request.version_info === "v7" && request.error_detail === undefined);
    xds.push("v7", [app(11)]);
    await fixed;
    expect(await limitOf(client)).toBe(11);
  });

  it("serves two domains from one push, and drops a domain a later push leaves out", async () => {
    const { xds, client, source } = await setup();
    xds.push("v1", [app(3, "checkout"), app(5, "search")]);
    await source.first;
    expect([await limitOf(client, "checkout"), await limitOf(client, "search")]).toEqual([3, 5]);
    const ack = xds.next((request) => request.version_info === "v2");
    xds.push("v2", [app(5, "search")]);
    await ack;
    expect([await limitOf(client, "checkout"), await limitOf(client, "search")]).toEqual([undefined, 5]);
  });

  it("keeps serving while the xDS server is gone, reconnects after the retry interval naming the version it holds", async () => {
    const { xds, client, source, lines } = await setup({ retryIntervalMs: 100 });
    xds.push("v1", [app(3)]);
    await source.first;
    const port = xds.port;
    xds.stop();
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await limitOf(client)).toBe(3);
    expect(lines.some((line) => /xDS stream to 127\.0\.0\.1:\d+ (ended|failed) .*connecting again in 100 ms; version "v1" stays in force/.test(line))).toBe(true);

    const restarted = new TestXdsServer();
    const hello = restarted.next((request) => request.response_nonce === "");
    await restarted.start(port);
    servers.push(restarted);
    expect(await hello).toMatchObject({ version_info: "v1", node: { id: "node-1" } });
    const ack = restarted.next((request) => request.version_info === "v2");
    restarted.push("v2", [app(8)]);
    await ack;
    expect(await limitOf(client)).toBe(8);
  });

  it("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES: a larger response is not taken (the stream fails and is opened again); the config in force stays", async () => {
    const { xds, client, source, lines } = await setup({ maxMessageBytes: 400 });
    xds.push("v1", [app(3)]);
    await source.first;
    const reopened = xds.next((request) => request.response_nonce === "" && request.version_info === "v1");
    xds.push("v2", [app(4), ...Array.from({ length: 20 }, (_, index) => app(5, `domain-${index}`))]);
    await reopened;
    expect(lines.some((line) => /xDS stream to .* ended \(.*larger than max/i.test(line))).toBe(true);
    expect([source.version(), await limitOf(client)]).toEqual(["v1", 3]);
  });

  it("shadow_mode and quota_mode in a pushed config act as in a file", async () => {
    const { xds, client, source } = await setup();
    const yaml = `domain: modes
descriptors:
  - key: shadowed
    shadow_mode: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: quota_a
    quota_mode: true
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: quota_b
    quota_mode: true
    rate_limit: { unit: hour, requests_per_unit: 5 }
`;
    xds.push("v1", [rateLimitConfigOf("modes", yaml)]);
    await source.first;
    const shadowed = [d(["shadowed", unique("s")])];
    expect((await client.ask("modes", shadowed)).overall_code).toBe("OK");
    const over = await client.ask("modes", shadowed);
    expect([over.overall_code, over.statuses[0]!.code]).toEqual(["OK", "OK"]);

    const a = d(["quota_a", unique("a")]);
    const b = d(["quota_b", unique("b")]);
    expect((await client.ask("modes", [a])).overall_code).toBe("OK");
    expect((await client.ask("modes", [a])).overall_code).toBe("OVER_LIMIT");
    // Beside a quota descriptor with room: admitted, its own status still OVER_LIMIT.
    const beside = await client.ask("modes", [a, b]);
    expect([beside.overall_code, ...beside.statuses.map((status) => status.code)]).toEqual(["OK", "OVER_LIMIT", "OK"]);
  });

  it("before the first push (FORCE_START_WITHOUT_INITIAL_CONFIG), answers UNAVAILABLE with the reason, not OK", async () => {
    const xds = await new TestXdsServer().start();
    const server = await startRlsServer({ limiter: new MemoryStore(), config: { domains: new Map() }, port: 0, unconfigured: () => "no rate limit configuration yet: waiting for the xDS server", log: () => {} });
    const client = rlsClient(server.address);
    servers.push(xds);
    try {
      await expect(client.ask("app", [d(["user", "x"])])).rejects.toMatchObject({ code: 14, details: "no rate limit configuration yet: waiting for the xDS server" });
    } finally {
      client.close();
      await server.close();
    }
  });

  it("an update under load (16 concurrent streams of calls) loses no call, and no answer mixes two configs", async () => {
    const { xds, server, source } = await setup();
    // Two descriptors per call, both limits from one push: A answers 1000/1001, B 2000/2001.
    const pair = (base: number): RateLimitConfigMessage => ({
      name: "load",
      domain: "load",
      descriptors: [
        { key: "one", rate_limit: { unit: "HOUR", requests_per_unit: base } },
        { key: "two", rate_limit: { unit: "HOUR", requests_per_unit: base + 1 } },
      ],
    });
    xds.push("v0", [pair(1000)]);
    await source.first;
    // 16 callers on two channels (Envoy keeps a few): 16 HTTP/2 streams in flight at once.
    const channels = [rlsClient(server.address), rlsClient(server.address)];
    const clients = Array.from({ length: 16 }, (_, index) => channels[index % 2]!);
    let stop = false;
    const seen = new Map<string, number>();
    let calls = 0;
    const callers = clients.map(async (client, index) => {
      for (let i = 0; !stop; i++) {
        calls++;
        const answer = await client.ask("load", [d(["one", `c${index}-${i}`]), d(["two", `c${index}-${i}`])]);
        const limits = answer.statuses.map((status) => status.current_limit?.requests_per_unit).join("/");
        seen.set(limits, (seen.get(limits) ?? 0) + 1);
      }
    });
    for (let version = 1; version <= 8; version++) {
      const ack = xds.next((request) => request.version_info === `v${version}`);
      xds.push(`v${version}`, [pair(version % 2 === 1 ? 2000 : 1000)]);
      await ack;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    stop = true;
    const settled = await Promise.allSettled(callers);
    for (const channel of channels) channel.close();
    expect(settled.filter((result) => result.status === "rejected")).toEqual([]);
    expect([...seen.keys()].sort()).toEqual(["1000/1001", "2000/2001"]);
    expect([...seen.values()].reduce((sum, count) => sum + count, 0)).toBe(calls);
    expect(calls).toBeGreaterThanOrEqual(32);
  });
});
