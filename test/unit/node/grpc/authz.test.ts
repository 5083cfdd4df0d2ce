import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { StoreUnavailableError } from "../../../../src/core/limiter.js";
import { parseConfig } from "../../../../src/config/config.js";
import { type RunningAuthzServer, loadAuthzProtos, peerIp, startAuthzServer } from "../../../../src/node/grpc/authz-server.js";
import { parseServeArgs } from "../../../../src/node/args/serve.js";
import { createNodeGateway } from "../../../../src/node/http/gateway.js";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { envoyBootstrap, extAuthzOf } from "../http/envoy-http-rig.js";

// Envoy's ext_authz gRPC service: a grpc-js client loading Envoy's published
// external_auth.proto (proto/, as Envoy's own data-plane-api has it) sends the CheckRequests
// Envoy's HTTP filter sends, to the Authorization service beside `spillway serve`'s server.

const BIN = fileURLToPath(new URL("../../../../bin/spillway.mjs", import.meta.url));
const PROTO_DIR = fileURLToPath(new URL("../../../../proto", import.meta.url));
const definition = protoLoader.loadSync("envoy/service/auth/v3/external_auth.proto", { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTO_DIR] });
const Authorization = (grpc.loadPackageDefinition(definition) as any).envoy.service.auth.v3.Authorization as grpc.ServiceClientConstructor;

interface HeaderOption {
  header: { key: string; value: string };
}
interface CheckResponse {
  status: { code: number; message: string };
  http_response?: "ok_response" | "denied_response";
  ok_response?: { headers: HeaderOption[]; response_headers_to_add: HeaderOption[] };
  denied_response?: { status: { code: string }; headers: HeaderOption[]; body: string };
}

const fieldsOf = (options: HeaderOption[] = []) => Object.fromEntries(options.map(({ header }) => [header.key, header.value]));

/** A CheckRequest as Envoy's HTTP filter builds it: the request's attributes, every field (pseudo-headers too). */
function envoyCheck(method: string, path: string, headers: Record<string, string> = {}, source = "203.0.113.5") {
  return {
    attributes: {
      source: { address: { socket_address: { address: source, port_value: 40000 } } },
      destination: { address: { socket_address: { address: "127.0.0.1", port_value: 8080 } } },
      request: { http: { id: "1", method, path, host: "api.example.com", scheme: "http", protocol: "HTTP/1.1", headers: { ":authority": "api.example.com", ":method": method, ":path": path, ...headers } } },
    },
  };
}

describe("ext_authz gRPC (envoy.service.auth.v3.Authorization/Check) beside spillway serve", () => {
  let server: RunningServer;
  let authz: RunningAuthzServer;
  let client: grpc.Client & Record<string, any>;
  let untrusted: { server: RunningServer; authz: RunningAuthzServer; client: grpc.Client & Record<string, any> };

  const start = async (trustProxy: string[], limiter = new MemoryStore()) => {
    const config = parseConfig({
      origin: "http://127.0.0.1:9", // never asked: Check only decides
      trustProxy,
      policies: [
        // An hour, not a minute: a burst that straddled a window's end would be admitted twice.
        { name: "per-hour", algorithm: "fixed-window", limit: 50, period: "1h" },
        { name: "one", algorithm: "fixed-window", limit: 1, period: "1h" },
      ],
      overrides: [{ policy: "per-hour", key: "gold", source: "header:x-api-key", limit: 60 }],
      routes: [
        { match: { path: "/api/*", methods: ["GET", "POST"] }, key: "header:x-api-key", policies: ["per-hour"] },
        { match: { path: "/by-ip/*" }, key: "ip", policies: ["one"] },
      ],
      allow: { keys: [{ key: "internal-batch", source: "header:x-api-key" }] },
      deny: { keys: [{ key: "leaked-key-7", source: "header:x-api-key" }], ips: ["198.51.100.0/24"] },
    });
    const http = await startServer({ config, limiter, port: 0, fallback: createNodeGateway({ config, limiter, log: () => {} }), token: "t", drainTimeoutMs: 100 });
    const grpcServer = await startAuthzServer({ auth: () => http.forwardAuth, port: 0, drainTimeoutMs: 100 });
    const grpcClient = new Authorization(grpcServer.address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
    return { server: http, authz: grpcServer, client: grpcClient };
  };

  beforeAll(async () => {
    ({ server, authz, client } = await start(["127.0.0.1", "::1"]));
    untrusted = await start(["10.0.0.1"]);
  });
  afterAll(async () => {
    for (const each of [{ server, authz, client }, untrusted]) {
      each?.client.close();
      await each?.authz.close();
      await each?.server.close();
    }
  });

  const check = (request: unknown, on = client): Promise<CheckResponse> => new Promise((resolve, reject) => on.Check(request, (error: grpc.ServiceError | null, answer: CheckResponse) => (error ? reject(error) : resolve(answer))));

  it("admits exactly the limit of 300 Checks at once, the RateLimit fields for the upstream and the client; the rest denied 429", async () => {
    const answers = await Promise.all(Array.from({ length: 300 }, () => check(envoyCheck("GET", "/api/items?page=2", { "x-api-key": "burst" }))));
    const ok = answers.filter((answer) => answer.status.code === 0);
    const denied = answers.filter((answer) => answer.status.code === 7);
    expect([ok.length, denied.length]).toEqual([50, 250]);
    for (const answer of ok) {
      expect(answer.http_response).toBe("ok_response");
      const upstream = fieldsOf(answer.ok_response!.headers);
      expect(upstream).toMatchObject({ ratelimit: expect.stringMatching(/^"per-hour";r=\d+;t=\d+$/), "ratelimit-policy": '"per-hour";q=50;w=3600', "spillway-route": "routes.0" });
      expect(fieldsOf(answer.ok_response!.response_headers_to_add)).toEqual(upstream);
    }
    for (const answer of denied) {
      expect(answer.denied_response!.status.code).toBe("TooManyRequests");
      const fields = fieldsOf(answer.denied_response!.headers);
      expect(Number(fields["retry-after"])).toBeGreaterThan(0);
      expect(fields).toMatchObject({ ratelimit: expect.stringMatching(/;r=0;/), "ratelimit-policy": '"per-hour";q=50;w=3600', "content-type": "application/problem+json" });
      expect(JSON.parse(answer.denied_response!.body)).toMatchObject({ status: 429, "violated-policies": ["per-hour"] });
    }
  });

  it("applies an override, the allow list and the deny list by key source", async () => {
    const gold = await Promise.all(Array.from({ length: 61 }, () => check(envoyCheck("POST", "/api/orders", { "x-api-key": "gold" }))));
    expect(gold.filter((answer) => answer.status.code === 0)).toHaveLength(60);
    const allowed = await Promise.all(Array.from({ length: 55 }, () => check(envoyCheck("GET", "/api/batch", { "x-api-key": "internal-batch" }))));
    expect(allowed.every((answer) => answer.status.code === 0)).toBe(true);
    const denied = await check(envoyCheck("GET", "/api/items", { "x-api-key": "leaked-key-7" }));
    expect([denied.status.code, denied.denied_response?.status.code]).toEqual([7, "Forbidden"]);
  });

  it("keys by the source address Envoy saw (not a client's X-Forwarded-For), and denies its deny-listed network", async () => {
    const spoofing = { "x-forwarded-for": "192.0.2.200" };
    expect((await check(envoyCheck("GET", "/by-ip/x", spoofing, "192.0.2.1"))).status.code).toBe(0);
    expect((await check(envoyCheck("GET", "/by-ip/x", spoofing, "192.0.2.1"))).status.code).toBe(7);
    expect((await check(envoyCheck("GET", "/by-ip/x", spoofing, "192.0.2.2"))).status.code).toBe(0);
    const listed = await check(envoyCheck("GET", "/by-ip/x", {}, "198.51.100.9"));
    expect([listed.status.code, listed.denied_response?.status.code]).toEqual([7, "Forbidden"]);
  });

  it("reads header_map (encode_raw_headers) as the headers map; allows what no route matches, saying so", async () => {
    const raw = envoyCheck("GET", "/api/raw");
    (raw.attributes.request.http as Record<string, unknown>).headers = {};
    (raw.attributes.request.http as Record<string, unknown>).header_map = { headers: [{ key: "x-api-key", raw_value: Buffer.from("raw-key") }] };
    const answer = await check(raw);
    expect([answer.status.code, fieldsOf(answer.ok_response?.headers).ratelimit]).toEqual([0, expect.stringMatching(/;r=49;/)]);
    const other = await check(envoyCheck("DELETE", "/api/items", { "x-api-key": "k" }));
    expect([other.status.code, fieldsOf(other.ok_response?.headers)]).toEqual([0, { "spillway-route": "none" }]);
  });

  it("answers bad input with a denied 400 naming the field (status INVALID_ARGUMENT), never an RPC error that Envoy might let through", async () => {
    const cases: [unknown, string][] = [
      [{}, "attributes.request.http is missing"],
      [{ attributes: { request: { http: { path: "/api/x" } } } }, "attributes.request.http.method is missing"],
      [{ attributes: { request: { http: { method: "GET" } } } }, "attributes.request.http.path is missing"],
      [envoyCheck("GE(T", "/api/x"), "attributes.request.http.method must be an HTTP method"],
      [envoyCheck("GET", "api/x"), "attributes.request.http.path must be an origin-form URI"],
      [envoyCheck("GET", "/api/a%2Fb"), 'encoded "/"'],
      [envoyCheck("GET", "/api/items"), "x-api-key"],
    ];
    for (const [request, detail] of cases) {
      const answer = await check(request);
      expect([answer.status.code, answer.status.message, answer.denied_response?.status.code]).toEqual([3, expect.stringContaining(detail), "BadRequest"]);
      expect(JSON.parse(answer.denied_response!.body).detail).toContain(detail);
    }
  });

  it("refuses a peer trustProxy does not list, naming the setting", async () => {
    const answer = await check(envoyCheck("GET", "/api/items", { "x-api-key": "k" }), untrusted.client);
    expect([answer.status.code, answer.denied_response?.status.code]).toEqual([7, "Forbidden"]);
    expect(answer.status.message).toBe("127.0.0.1 is not in trustProxy: forward-auth believes forwarded fields only from the proxy addresses trustProxy lists");
  });

  it("docs/proxies.md's gRPC bootstrap names the Authorization cluster on the port its serve command gives --ext-authz-port", () => {
    const bootstrap = envoyBootstrap("grpc_service");
    const { filter } = extAuthzOf(bootstrap);
    expect(filter).toMatchObject({ transport_api_version: "V3", failure_mode_allow: false });
    const cluster = bootstrap.static_resources.clusters.find((entry: { name: string }) => entry.name === filter.grpc_service.envoy_grpc.cluster_name);
    expect(cluster.typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].explicit_http_config).toHaveProperty("http2_protocol_options");
    const port = cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value;
    const docs = readFileSync(fileURLToPath(new URL("../../../../docs/proxies.md", import.meta.url)), "utf8");
    expect(/^npx spillway serve .*--ext-authz-port (\d+)$/m.exec(docs)?.[1]).toBe(String(port));
  });

  it("answers grpc.health.v1.Health for the Authorization service", async () => {
    const { Health } = loadAuthzProtos();
    const health = new Health(authz.address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
    const ask = (service: string) => new Promise<{ status: string }>((resolve, reject) => health.Check({ service }, (error: grpc.ServiceError | null, answer: { status: string }) => (error ? reject(error) : resolve(answer))));
    try {
      expect((await ask("envoy.service.auth.v3.Authorization")).status).toBe("SERVING");
      await expect(ask("other")).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    } finally {
      health.close();
    }
  });

  it("answers a store that cannot be reached (failMode closed) with the gateway's denied 503, not an RPC error", async () => {
    const down = new MemoryStore();
    down.check = () => Promise.reject(new StoreUnavailableError("connection refused"));
    const broken = await start(["127.0.0.1"], down);
    const quiet = vi.spyOn(console, "log").mockImplementation(() => {});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const answer = await check(envoyCheck("GET", "/api/items", { "x-api-key": "k" }), broken.client);
      expect([answer.status.code, answer.denied_response?.status.code]).toEqual([7, "ServiceUnavailable"]);
    } finally {
      quiet.mockRestore();
      warn.mockRestore();
      broken.client.close();
      await broken.authz.close();
      await broken.server.close();
    }
  });

  it("reads grpc-js's peer forms", () => {
    expect(["127.0.0.1:5000", "::1:5000", "ipv6:[::1]:5000", "ipv4:10.0.0.1:1"].map(peerIp)).toEqual(["127.0.0.1", "::1", "::1", "10.0.0.1"]);
  });
});

describe("spillway serve --ext-authz-port", { timeout: 60_000 }, () => {
  it("serves Check beside HTTP from the config's routes, and stops on SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "spillway-authz-"));
    const configPath = join(dir, "spillway.config.json");
    writeFileSync(configPath, JSON.stringify({ origin: "http://127.0.0.1:9", trustProxy: ["127.0.0.1"], policies: [{ name: "two", algorithm: "fixed-window", limit: 2, period: "1m" }], routes: [{ match: { path: "/api/*" }, key: "header:x-api-key", policies: ["two"] }] }));
    const child = spawn(process.execPath, [BIN, "serve", "--config", configPath, "--store", "memory", "--port", "0", "--no-metrics", "--ext-authz-port", "0"], { env: { ...process.env, SPILLWAY_TOKEN: "t" }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      const deadline = Date.now() + 30_000;
      while (!/ext_authz \(gRPC\) on (\S+)/.test(output) && child.exitCode === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      const address = /ext_authz \(gRPC\) on (\S+)/.exec(output)?.[1];
      expect(address, output).toBeDefined();
      const cli = new Authorization(address!, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
      const ask = (): Promise<CheckResponse> => new Promise((resolve, reject) => cli.Check(envoyCheck("GET", "/api/x", { "x-api-key": "k" }), (error: grpc.ServiceError | null, answer: CheckResponse) => (error ? reject(error) : resolve(answer))));
      expect([(await ask()).status.code, (await ask()).status.code, (await ask()).status.code]).toEqual([0, 0, 7]);
      cli.close();
      child.kill("SIGTERM");
      expect(await exit).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("--ext-authz-port", () => {
  it("takes a port with --config, and names the flag otherwise", () => {
    expect(parseServeArgs(["--config", "c.json", "--store", "memory", "--ext-authz-port", "9191"], {}).extAuthzPort).toBe(9191);
    expect(() => parseServeArgs(["--config", "c.json", "--store", "memory", "--ext-authz-port", "-1"], {})).toThrow(/^--ext-authz-port: must be an integer from 0 to 65535, got "-1"$/);
    expect(() => parseServeArgs(["--rls-port", "0", "--rls-config", "r.yaml", "--store", "memory", "--ext-authz-port", "1"], {})).toThrow(/^--ext-authz-port: needs --config/);
  });
});
