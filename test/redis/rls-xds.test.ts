import { execFile } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { startRlsCommand } from "../../src/node/grpc/command.js";
import { d, unique } from "../unit/node/grpc/rls-helpers.js";
import { TestXdsServer, rateLimitConfigOf } from "../unit/node/grpc/xds-server.js";
import { LIMITS, type Started, startRls } from "./rls-env-helpers.js";

const run = promisify(execFile);

/** `spillway rls` (the function the command runs) configured as Envoy Gateway deploys it: CONFIG_TYPE=GRPC_XDS_SOTW and an xDS server. */
describe("spillway rls with its config from an xDS server", () => {
  let redis: RedisServer;
  const started: Started[] = [];
  const servers: TestXdsServer[] = [];
  const xdsServer = async (credentials?: grpc.ServerCredentials) => {
    const xds = await new TestXdsServer().start(0, credentials);
    servers.push(xds);
    return xds;
  };
  const env = (xds: TestXdsServer, more: Record<string, string> = {}) => ({
    REDIS_SOCKET_TYPE: "tcp",
    REDIS_URL: `127.0.0.1:${redis.port}`,
    CACHE_KEY_PREFIX: `${unique("xds")}:`,
    CONFIG_TYPE: "GRPC_XDS_SOTW",
    CONFIG_GRPC_XDS_SERVER_URL: xds.address,
    CONFIG_GRPC_XDS_NODE_ID: "ratelimit",
    CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: "50ms",
    ...more,
  });
  const app = rateLimitConfigOf("app", LIMITS);

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const one of started) await one.stop();
    for (const xds of servers) xds.stop();
    await redis?.stop();
  });

  it("without FORCE_START_WITHOUT_INITIAL_CONFIG, serves nothing until the first config, then that config", async () => {
    const xds = await xdsServer();
    let up = false;
    const starting = startRls(env(xds)).then((one) => ((up = true), started.push(one), one));
    await xds.next();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(up).toBe(false);
    xds.push("1", [app]);
    const one = await starting;
    expect(one.lines.some((line) => line.includes("waiting for the first config from the xDS server at"))).toBe(true);
    expect(one.lines.some((line) => line.includes(`1 domain(s) from the xDS server at ${xds.address}`))).toBe(true);
    const user = unique("u");
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await one.client.ask("app", [d(["user", user])])).overall_code);
    expect(codes).toEqual(["OK", "OK", "OK", "OVER_LIMIT"]);
    // SIGHUP has no file to read: the config stays, and says where it comes from.
    expect(await one.running.reload()).toBe(false);
  });

  it("FORCE_START_WITHOUT_INITIAL_CONFIG=true serves at once: UNAVAILABLE until the first config, then decisions", async () => {
    const xds = await xdsServer();
    const one = await startRls(env(xds, { FORCE_START_WITHOUT_INITIAL_CONFIG: "true" }));
    started.push(one);
    await expect(one.client.ask("app", [d(["user", "x"])])).rejects.toMatchObject({ code: 14, details: `no rate limit configuration yet: waiting for the xDS server at ${xds.address}` });
    // Health is the store's, as the reference's (HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED would say NOT_SERVING).
    expect((await fetch(`${one.running.httpUrl}/healthcheck`)).status).toBe(200);
    const ack = xds.next((request) => request.version_info === "1");
    xds.push("1", [app]);
    await ack;
    expect((await one.client.ask("app", [d(["user", unique("u")])])).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 2 });
    expect(xds.requests[0]).toMatchObject({ node: { id: "ratelimit" } });
  });

  it("a stop signal while it waits for the first config ends the wait", async () => {
    const xds = await xdsServer();
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const starting = startRlsCommand({ GRPC_HOST: "127.0.0.1", GRPC_PORT: "0", HOST: "127.0.0.1", PORT: "0", ...env(xds) }, { write: () => {}, stopped });
    await xds.next();
    stop();
    await expect(starting).rejects.toMatchObject({ name: "RlsStartStopped" });
  });

  it("CONFIG_GRPC_XDS_SERVER_USE_TLS with the CA, a client certificate and CONFIG_GRPC_XDS_SERVER_TLS_SAN: mutual TLS to the xDS server", async () => {
    const certs = await mkdtemp(join(tmpdir(), "spillway-xds-tls-"));
    const ssl = (...args: string[]) => run("openssl", args, { cwd: certs });
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    await ssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=xds test CA");
    for (const name of ["server", "client"]) {
      await ssl("req", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
      await run("sh", ["-c", `printf 'subjectAltName=DNS:${name === "server" ? "xds.internal" : "client"}' > ${name}.ext`], { cwd: certs });
      await ssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.pem`, "-days", "1", "-extfile", `${name}.ext`);
    }
    const file = (name: string) => readFile(join(certs, name));
    const xds = await xdsServer(grpc.ServerCredentials.createSsl(await file("ca.pem"), [{ cert_chain: await file("server.pem"), private_key: await file("server.key") }], true));
    xds.push("1", [app]);
    const tls = { CONFIG_GRPC_XDS_SERVER_USE_TLS: "true", CONFIG_GRPC_XDS_SERVER_TLS_CACERT: join(certs, "ca.pem"), CONFIG_GRPC_XDS_CLIENT_TLS_CERT: join(certs, "client.pem"), CONFIG_GRPC_XDS_CLIENT_TLS_KEY: join(certs, "client.key"), CONFIG_GRPC_XDS_SERVER_TLS_SAN: "xds.internal" };
    const one = await startRls(env(xds, tls));
    started.push(one);
    expect((await one.client.ask("app", [d(["user", unique("u")])])).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 2 });
    // Without the client certificate the server refuses the stream; the service, forced to start, waits on.
    const anonymous = await startRls(env(xds, { ...tls, CONFIG_GRPC_XDS_CLIENT_TLS_CERT: "", CONFIG_GRPC_XDS_CLIENT_TLS_KEY: "", FORCE_START_WITHOUT_INITIAL_CONFIG: "true" }));
    started.push(anonymous);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await expect(anonymous.client.ask("app", [d(["user", "x"])])).rejects.toMatchObject({ code: 14 });
    expect(anonymous.lines.some((line) => line.includes("xDS stream to") && line.includes("failed"))).toBe(true);
  });
});
