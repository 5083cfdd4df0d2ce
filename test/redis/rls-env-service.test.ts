import { execFile } from "node:child_process";
import { connect } from "node:http2";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/free-port.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { d, rlsClient, unique } from "../unit/node/grpc/rls-helpers.js";
import { type Started, runtimeRoot, startRls } from "./rls-env-helpers.js";

const run = promisify(execFile);
const EXAMPLE = new URL("../unit/fixtures/envoy-example.yaml", import.meta.url);

/** The listeners, logs, stats and answers of `spillway rls`, one variable at a time. */
describe("spillway rls: listeners, logs, stats and answers", () => {
  let redis: RedisServer;
  let root: string;
  const started: Started[] = [];
  // TLS clients name the certificate's host (the address is an IP, which SNI does not carry).
  const TLS_NAME = { "grpc.ssl_target_name_override": "localhost", "grpc.default_authority": "localhost" };
  const start = async (env: Record<string, string>, credentials?: grpc.ChannelCredentials) => {
    const one = await startRls({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${redis.port}`, RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: "ratelimit", ...env }, { credentials, ...(credentials ? { clientOptions: TLS_NAME } : {}) });
    started.push(one);
    return one;
  };

  beforeAll(async () => {
    redis = await startRedis();
    ({ root } = await runtimeRoot({ "example.yaml": await readFile(EXAMPLE, "utf8") }));
  });
  afterAll(async () => {
    for (const one of started) await one.stop();
    await redis?.stop();
  });

  it("GRPC_HOST and GRPC_PORT: where the gRPC service listens", async () => {
    const port = await freePort();
    const one = await start({ GRPC_HOST: "127.0.0.1", GRPC_PORT: String(port) });
    expect(one.running.grpcAddress).toBe(`127.0.0.1:${port}`);
    expect((await one.client.ask("rl", [d(["foo", unique("x")])])).overall_code).toBe("OK");
  });

  it("GRPC_UDS: a unix socket instead", async () => {
    const path = join(await mkdtemp(join(tmpdir(), "spillway-uds-")), "rls.sock");
    const one = await start({ GRPC_UDS: path });
    expect(one.running.grpcAddress).toBe(`unix:${path}`);
    expect((await one.client.ask("rl", [d(["foo", unique("x")])])).statuses[0]!.limit_remaining).toBe(1);
  });

  it("GRPC_MAX_CONNECTION_AGE and _GRACE: a connection is sent GOAWAY when it is that old", async () => {
    const one = await start({ GRPC_MAX_CONNECTION_AGE: "200ms", GRPC_MAX_CONNECTION_AGE_GRACE: "100ms" });
    const session = connect(`http://${one.running.grpcAddress}`);
    const goaway = await new Promise<boolean>((resolve) => {
      session.once("goaway", () => resolve(true));
      setTimeout(() => resolve(false), 10_000).unref();
    });
    session.destroy();
    expect(goaway).toBe(true);
  });

  it("GRPC_SERVER_USE_TLS, _CERT, _KEY and GRPC_CLIENT_TLS_CACERT: TLS, and mutual TLS", async () => {
    const certs = await mkdtemp(join(tmpdir(), "spillway-grpc-tls-"));
    const ssl = (...args: string[]) => run("openssl", args, { cwd: certs });
    await ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=test CA");
    for (const name of ["server", "client"]) {
      await ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name === "server" ? "localhost" : "client"}`);
      await run("sh", ["-c", `printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > ${name}.ext`], { cwd: certs });
      await ssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.pem`, "-days", "1", "-extfile", `${name}.ext`);
    }
    const file = (name: string) => readFile(join(certs, name));
    const tls = { GRPC_SERVER_USE_TLS: "true", GRPC_SERVER_TLS_CERT: join(certs, "server.pem"), GRPC_SERVER_TLS_KEY: join(certs, "server.key") };
    const secure = await start(tls, grpc.credentials.createSsl(await file("ca.pem")));
    expect((await secure.client.ask("rl", [d(["foo", unique("x")])])).overall_code).toBe("OK");
    const plain = rlsClient(secure.running.grpcAddress);
    await expect(plain.ask("rl", [d(["foo", "x"])], { deadlineMs: 2000 })).rejects.toMatchObject({ code: expect.any(Number) });
    plain.close();
    const mutual = await start({ ...tls, GRPC_CLIENT_TLS_CACERT: join(certs, "ca.pem") }, grpc.credentials.createSsl(await file("ca.pem"), await file("client.key"), await file("client.pem")));
    expect((await mutual.client.ask("rl", [d(["foo", unique("x")])])).overall_code).toBe("OK");
    const anonymous = rlsClient(mutual.running.grpcAddress, grpc.credentials.createSsl(await file("ca.pem")), TLS_NAME);
    await expect(anonymous.ask("rl", [d(["foo", "x"])], { deadlineMs: 2000 })).rejects.toMatchObject({ code: 14 });
    anonymous.close();
  });

  it("HOST and PORT: the HTTP side, with /healthcheck", async () => {
    const port = await freePort();
    const one = await start({ HOST: "127.0.0.1", PORT: String(port) });
    expect(one.running.httpUrl).toBe(`http://127.0.0.1:${port}`);
    const answer = await fetch(`http://127.0.0.1:${port}/healthcheck`);
    expect([answer.status, await answer.text()]).toEqual([200, "OK"]);
  });

  // A start that says nothing looks like one that hangs: the line is at warn, as the reference's "Listening for gRPC" lines.
  it("LOG_LEVEL: warn (the default) and below say once that it is up; error keeps the line out", async () => {
    for (const level of [undefined, "info"]) {
      const one = await start(level ? { LOG_LEVEL: level } : {});
      expect(one.lines.filter((line) => line.includes("level=warning") && line.includes("rate limit service (gRPC) on 127.0.0.1:")), one.lines.join("\n")).toHaveLength(1);
    }
    const quiet = await start({ LOG_LEVEL: "error" });
    expect(quiet.lines.some((line) => line.includes("rate limit service"))).toBe(false);
  });

  it("LOG_FORMAT=json: one JSON object a line, the reference's field names", async () => {
    const one = await start({ LOG_LEVEL: "debug", LOG_FORMAT: "json" });
    const line = JSON.parse(one.lines.find((text) => text.includes("rate limit service"))!);
    expect(line).toMatchObject({ level: "warning", "@message": expect.stringContaining("rate limit service (gRPC)") });
    expect(Number.isNaN(Date.parse(line["@timestamp"]))).toBe(false);
  });

  it("USE_PROMETHEUS, PROMETHEUS_ADDR and PROMETHEUS_PATH: the reference's stats there", async () => {
    const port = await freePort();
    const one = await start({ USE_PROMETHEUS: "true", PROMETHEUS_ADDR: `127.0.0.1:${port}`, PROMETHEUS_PATH: "/stats" });
    expect(one.running.prometheusUrl).toBe(`http://127.0.0.1:${port}/stats`);
    await one.client.ask("rl", [d(["category", "account"])]);
    const text = await (await fetch(`http://127.0.0.1:${port}/stats`)).text();
    expect(text).toMatch(/ratelimit_service_rate_limit_total_hits\{domain="rl",key="category_account"\} \d+/);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
    const off = await start({});
    expect(off.running.prometheusUrl).toBeUndefined();
  });

  it("DISABLE_STATS: no per-rule stats", async () => {
    const on = await start({ USE_PROMETHEUS: "true", PROMETHEUS_ADDR: "127.0.0.1:0" });
    expect(on.running.prometheusUrl).toBeDefined();
    const off = await start({ USE_PROMETHEUS: "true", PROMETHEUS_ADDR: "127.0.0.1:0", DISABLE_STATS: "true" });
    expect(off.running.prometheusUrl).toBeUndefined();
  });

  it("NEAR_LIMIT_RATIO: when an admitted hit counts as near the limit", async () => {
    const near = async (ratio?: string) => {
      const one = await start({ USE_PROMETHEUS: "true", PROMETHEUS_ADDR: "127.0.0.1:0", ...(ratio ? { NEAR_LIMIT_RATIO: ratio } : {}) });
      await one.client.ask("rl", [d(["foo", unique("f")], ["bar", "x"])]); // foo.bar: 3 a minute, 1 used (33 %)
      const text = await (await fetch(one.running.prometheusUrl!)).text();
      return Number(/ratelimit_service_rate_limit_near_limit\{domain="rl",key="foo.bar"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    expect(await near()).toBe(0);
    expect(await near("0.3")).toBe(1);
  });

  it("LIMIT_RESPONSE_HEADERS_ENABLED and the three names: the reference's headers", async () => {
    const value = unique("h");
    const plain = await start({});
    expect((await plain.client.ask("rl", [d(["foo", value])])).response_headers_to_add ?? []).toEqual([]);
    const one = await start({ LIMIT_RESPONSE_HEADERS_ENABLED: "true", LIMIT_REMAINING_HEADER: "X-Left" });
    const headers = (await one.client.ask("rl", [d(["foo", value])])).response_headers_to_add!;
    expect(headers.map((header) => header.key)).toEqual(["RateLimit-Limit", "X-Left", "RateLimit-Reset"]);
    expect(headers.slice(0, 2).map((header) => header.value)).toEqual(["2", "0"]);
    expect(Number(headers[2]!.value)).toBeGreaterThan(0);
    expect(Number(headers[2]!.value)).toBeLessThanOrEqual(60);
  });

  it("SHADOW_MODE: over the limit, answered OK", async () => {
    const value = unique("s");
    const one = await start({ SHADOW_MODE: "true" });
    await one.client.ask("rl", [d(["foo", value])], { hitsAddend: 2 });
    const answer = await one.client.ask("rl", [d(["foo", value])]);
    expect([answer.overall_code, answer.statuses[0]!.code]).toEqual(["OK", "OVER_LIMIT"]);
  });

  it("QUOTA_MODE: every descriptor a quota descriptor", async () => {
    const value = unique("q");
    const one = await start({ QUOTA_MODE: "true" });
    await one.client.ask("rl", [d(["foo", value])], { hitsAddend: 2 });
    const answer = await one.client.ask("rl", [d(["foo", value]), d(["unspec", unique("u")])]);
    expect(answer.overall_code).toBe("OK");
    expect(answer.statuses.map((status) => status.code)).toEqual(["OVER_LIMIT", "OK"]);
  });

  it("RESPONSE_DYNAMIC_METADATA: dynamic_metadata on the answer", async () => {
    const one = await start({ RESPONSE_DYNAMIC_METADATA: "true" });
    const answer = (await one.client.ask("rl", [d(["service", "service_2"])])) as { dynamic_metadata?: { fields: Record<string, unknown> } };
    expect(Object.keys(answer.dynamic_metadata!.fields).sort()).toEqual(["descriptors", "domain", "metadata"]);
    const without = await start({});
    expect((await without.client.ask("rl", [d(["service", "service_2"])])).dynamic_metadata).toBeUndefined();
  });
});
