import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis, startRedisCluster } from "../../scripts/redis-server.js";
import { startSentinelGroup } from "../../scripts/redis-sentinel.js";
import { d } from "../unit/node/grpc/rls-helpers.js";
import { LIMITS, type Started, refusal, runtimeRoot, startRls } from "./rls-env-helpers.js";

const run = promisify(execFile);

/**
 * The store variables of `spillway rls`: each one changes where and how Redis is reached.
 * Concurrent: each case starts its own servers or uses its own keys, and most of their time is
 * spent in `spillway rls`'s 3 s wait for a Redis that refuses it (no password, no certificate, no
 * sentinel password), not on the CPU: one after another they took 28 s.
 */
describe.concurrent("spillway rls: the store variables", () => {
  let redis: RedisServer;
  let socketDir: string;
  let root: string;
  const started: Started[] = [];
  const base = () => ({ RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: "ratelimit" });
  const start = async (env: Record<string, string>) => {
    const one = await startRls({ RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: "ratelimit", ...env });
    started.push(one);
    return one;
  };

  beforeAll(async () => {
    socketDir = await mkdtemp(join(tmpdir(), "spillway-sock-"));
    redis = await startRedis(["--unixsocket", join(socketDir, "redis.sock"), "--unixsocketperm", "700"]);
    ({ root } = await runtimeRoot({ "limits.yaml": LIMITS }));
  });

  afterAll(async () => {
    for (const one of started) await one.stop();
    await redis?.stop();
  });

  // First and alone, not beside the others: its first call must be answered within 150 ms.
  it.sequential("REDIS_TIMEOUT: how long a call waits for Redis before the answer is UNAVAILABLE", async () => {
    const stalled = await startRedis();
    try {
      const one = await start({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${stalled.port}`, REDIS_TIMEOUT: "150ms" });
      expect((await one.client.ask("app", [d(["user", "u-timeout"])])).overall_code).toBe("OK");
      stalled.process.kill("SIGSTOP");
      await expect(one.client.ask("app", [d(["user", "u-timeout"])])).rejects.toMatchObject({ code: 14, details: expect.stringContaining("did not answer within 150 ms") });
      stalled.process.kill("SIGCONT");
      expect(await refusal({ ...base(), REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${stalled.port}`, REDIS_TIMEOUT: "10 seconds" })).toContain("REDIS_TIMEOUT: must be a Go duration");
    } finally {
      stalled.process.kill("SIGCONT");
      await stalled.stop();
    }
  });

  it("REDIS_SOCKET_TYPE: unix by default (REDIS_URL a socket path), tcp for host:port", async () => {
    const unix = await start({ REDIS_URL: join(socketDir, "redis.sock") });
    expect((await unix.client.ask("app", [d(["user", "u-unix"])])).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 2 });
    const tcp = await start({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${redis.port}` });
    // The same Redis: the counter the unix client started.
    expect((await tcp.client.ask("app", [d(["user", "u-unix"])])).statuses[0]).toMatchObject({ limit_remaining: 1 });
    expect(await refusal({ ...base(), REDIS_SOCKET_TYPE: "tcp", REDIS_URL: join(socketDir, "redis.sock") })).toContain("REDIS_URL: must be host:port");
    expect(await refusal({ ...base(), REDIS_SOCKET_TYPE: "udp" })).toContain("REDIS_SOCKET_TYPE: must be unix or tcp");
  });

  it("REDIS_URL: the counters land in the Redis it names", async () => {
    const other = await startRedis();
    try {
      const one = await start({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${other.port}` });
      await one.client.ask("app", [d(["user", "u-url"])]);
      const peek = new Redis(other.port, "127.0.0.1");
      expect((await peek.keys("spillway:*")).length).toBeGreaterThan(0);
      peek.disconnect();
      expect(await refusal({ ...base(), REDIS_SOCKET_TYPE: "tcp", REDIS_URL: "redis://127.0.0.1:6379" })).toContain("REDIS_URL: must be host:port");
    } finally {
      await other.stop();
    }
  });

  it("REDIS_AUTH: a password, or user:password for an ACL user", async () => {
    const locked = await startRedis();
    try {
      const admin = new Redis(locked.port, "127.0.0.1");
      await admin.call("ACL", "SETUSER", "alice", "on", ">al1ce", "~*", "&*", "+@all");
      await admin.config("SET", "requirepass", "s3cret");
      admin.disconnect();
      const url = `127.0.0.1:${locked.port}`;
      // Started together: `without` waits 3 s for a Redis that refuses it, the others do not.
      const [without, password, user] = await Promise.all([
        start({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: url }),
        start({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: url, REDIS_AUTH: "s3cret" }),
        start({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: url, REDIS_AUTH: "alice:al1ce" }),
      ]);
      await expect(without.client.ask("app", [d(["user", "u-auth"])])).rejects.toMatchObject({ code: 14 }); // UNAVAILABLE
      expect((await password.client.ask("app", [d(["user", "u-auth"])])).overall_code).toBe("OK");
      expect((await user.client.ask("app", [d(["user", "u-auth"])])).statuses[0]!.limit_remaining).toBe(1);
    } finally {
      await locked.stop();
    }
  });

  it("CACHE_KEY_PREFIX: the prefix of every key", async () => {
    const one = await start({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${redis.port}`, CACHE_KEY_PREFIX: "rl_prefix:" });
    await one.client.ask("app", [d(["user", "u-prefix"])]);
    const peek = new Redis(redis.port, "127.0.0.1");
    expect((await peek.keys("rl_prefix:*")).length).toBeGreaterThan(0);
    peek.disconnect();
    expect(await refusal({ ...base(), REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${redis.port}`, CACHE_KEY_PREFIX: "a{b}" })).toContain("CACHE_KEY_PREFIX: must not contain braces");
  });

  it("REDIS_TYPE=cluster: REDIS_URL lists the seed nodes (host:port,host:port)", async () => {
    const cluster = await startRedisCluster(3);
    try {
      const nodes = cluster.startupNodes.map(({ host, port }) => `${host}:${port}`).join(",");
      const one = await start({ REDIS_TYPE: "cluster", REDIS_URL: nodes });
      for (let i = 2; i >= 0; i--) expect((await one.client.ask("app", [d(["user", "u-cluster"])])).statuses[0]!.limit_remaining).toBe(i);
      expect((await one.client.ask("app", [d(["user", "u-cluster"])])).overall_code).toBe("OVER_LIMIT");
      // Plain Redis would refuse the cluster's keys' hash tags nowhere; a cluster seed list read as one server would not connect.
      expect(await refusal({ ...base(), REDIS_TYPE: "cluster", REDIS_URL: "127.0.0.1" })).toContain("REDIS_URL: must be host:port");
    } finally {
      await cluster.stop();
    }
  });

  it("REDIS_TYPE=sentinel: REDIS_URL is name,host:port,…; REDIS_AUTH the master's password, REDIS_SENTINEL_AUTH the sentinels'", async () => {
    const group = await startSentinelGroup({ replicas: 0, sentinelCount: 1, password: "m-secret", sentinelPassword: "s-secret" });
    try {
      const url = [group.name, ...group.addresses.map(({ host, port }) => `${host}:${port}`)].join(",");
      // Started together: `locked` and the unknown name each wait 3 s for an answer that does not come.
      const [one, locked, unknownName] = await Promise.all([
        start({ REDIS_TYPE: "sentinel", REDIS_URL: url, REDIS_AUTH: "m-secret", REDIS_SENTINEL_AUTH: "s-secret" }),
        // Without the sentinels' password the master is never found: no decision.
        start({ REDIS_TYPE: "sentinel", REDIS_URL: url, REDIS_AUTH: "m-secret" }),
        refusal({ ...base(), REDIS_TYPE: "sentinel", REDIS_URL: url.replace(group.name, "nosuchmaster"), REDIS_AUTH: "m-secret", REDIS_SENTINEL_AUTH: "s-secret" }),
      ]);
      expect((await one.client.ask("app", [d(["user", "u-sentinel"])])).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 2 });
      await expect(locked.client.ask("app", [d(["user", "u-sentinel"])])).rejects.toMatchObject({ code: 14 });
      expect(unknownName).toContain('REDIS_URL: the master name "nosuchmaster"');
    } finally {
      await group.stop();
    }
    expect(await refusal({ ...base(), REDIS_TYPE: "sentinel", REDIS_URL: "mymaster" })).toContain("REDIS_URL: must be <master name>,<sentinel host:port>");
    expect(await refusal({ ...base(), REDIS_TYPE: "replicated" })).toContain("REDIS_TYPE: must be single, cluster or sentinel");
  });

  describe("REDIS_TLS", () => {
    let tlsRedis: RedisServer;
    let certs: string;
    const tlsEnv = () => ({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${tlsRedis.port}`, REDIS_TLS: "true" });

    beforeAll(async () => {
      certs = await mkdtemp(join(tmpdir(), "spillway-tls-"));
      const ssl = (...args: string[]) => run("openssl", args, { cwd: certs });
      await ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=spillway test CA");
      // The server's certificate names localhost only: reached as 127.0.0.1, the name does not match.
      for (const [name, subject, san] of [["server", "/CN=localhost", "subjectAltName=DNS:localhost"], ["client", "/CN=client", "subjectAltName=DNS:client"]] as const) {
        await ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject);
        await run("sh", ["-c", `printf '%s' '${san}' > ${name}.ext`], { cwd: certs });
        await ssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.pem`, "-days", "1", "-extfile", `${name}.ext`);
      }
      const port = await import("../../scripts/free-port.js").then(({ freePort }) => freePort());
      tlsRedis = await startRedis(["--tls-port", String(port), "--tls-cert-file", join(certs, "server.pem"), "--tls-key-file", join(certs, "server.key"), "--tls-ca-cert-file", join(certs, "ca.pem"), "--tls-auth-clients", "yes"]);
      tlsRedis.port = port;
    });

    afterAll(async () => {
      await tlsRedis?.stop();
    });

    it("REDIS_TLS with REDIS_TLS_CACERT, REDIS_TLS_CLIENT_CERT and _KEY: a TLS Redis that asks for a client certificate", async () => {
      const one = await start({ ...tlsEnv(), REDIS_TLS_CACERT: join(certs, "ca.pem"), REDIS_TLS_CLIENT_CERT: join(certs, "client.pem"), REDIS_TLS_CLIENT_KEY: join(certs, "client.key"), REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: "true" });
      expect((await one.client.ask("app", [d(["user", "u-tls"])])).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 2 });
      // Without the client certificate, Redis refuses the handshake: no decision.
      const anonymous = await start({ ...tlsEnv(), REDIS_TLS_CACERT: join(certs, "ca.pem"), REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: "true" });
      await expect(anonymous.client.ask("app", [d(["user", "u-tls"])])).rejects.toMatchObject({ code: 14 });
      expect(await refusal({ ...base(), ...tlsEnv(), REDIS_TLS_CACERT: join(certs, "missing.pem") })).toContain("REDIS_TLS_CACERT: cannot read");
    });

    it("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: a certificate for another name is accepted only with it", async () => {
      const files = { REDIS_TLS_CACERT: join(certs, "ca.pem"), REDIS_TLS_CLIENT_CERT: join(certs, "client.pem"), REDIS_TLS_CLIENT_KEY: join(certs, "client.key") };
      const strict = await start({ ...tlsEnv(), ...files });
      await expect(strict.client.ask("app", [d(["user", "u-name"])])).rejects.toMatchObject({ code: 14 });
      const lenient = await start({ ...tlsEnv(), ...files, REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: "true" });
      expect((await lenient.client.ask("app", [d(["user", "u-name"])])).overall_code).toBe("OK");
    });
  });
});
