import { execFile } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import type { CheckOptions, Decision, Policy } from "../../../../src/core/types.js";
import { ForwardingLimiter } from "../../../../src/core/limiter.js";
import { type RunningRlsServer, startRlsServer } from "../../../../src/node/grpc/server.js";
import { parseRlsConfig } from "../../../../src/rls/config.js";
import { parseRlsText } from "../../../../src/rls/files.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { type RlsClient, d, rlsClient } from "./rls-helpers.js";

const config = parseRlsConfig([parseRlsText("slow.yaml", "domain: slow\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 100 }\n")]);

/** A store that answers after `delayMs`: a stalled network, seen from Spillway. */
class DelayedStore extends ForwardingLimiter {
  checks = 0;
  private readonly delayMs: number;
  constructor(delayMs: number) {
    super(new MemoryStore());
    this.delayMs = delayMs;
  }
  override async check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> {
    this.checks++;
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    return super.check(key, policies, options);
  }
}

const opened: { server?: RunningRlsServer; client?: RlsClient }[] = [];
afterEach(async () => {
  for (const { server, client } of opened.splice(0)) {
    client?.close();
    await server?.close();
  }
});

describe("the RLS gRPC server", () => {
  it("answers bytes that are no RateLimitRequest INVALID_ARGUMENT, naming the problem, and counts nothing; a burst of them beside good requests", async () => {
    const store = new MemoryStore();
    const server = await startRlsServer({ limiter: store, config, port: 0 });
    const client = rlsClient(server.address);
    // A client that sends raw bytes: `domain` says 14 bytes and holds 2.
    const raw = new grpc.Client(server.address, grpc.credentials.createInsecure());
    opened.push({ server, client });
    const sendRaw = (bytes: Buffer) =>
      new Promise<grpc.ServiceError | null>((resolve) =>
        raw.makeUnaryRequest("/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit", (value: Buffer) => value, (value: Buffer) => value, bytes, (error) => resolve(error)),
      );
    try {
      const error = await sendRaw(Buffer.from([0x0a, 0x0e, 0x73, 0x6c]));
      expect(error).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: "request: not a RateLimitRequest (index out of range)" });
      // 200 malformed and 150 good requests at once: every malformed one refused by name, the
      // good ones decided as usual (100 a minute for one user: exactly 100 admitted).
      const answers = await Promise.all([
        ...Array.from({ length: 200 }, () => sendRaw(Buffer.from([0x12, 0x05, 0x0a, 0x01]))),
        ...Array.from({ length: 150 }, () => client.ask("slow", [d(["user", "burst"])])),
      ]);
      const refused = answers.slice(0, 200) as (grpc.ServiceError | null)[];
      expect(refused.every((answer) => answer?.code === grpc.status.INVALID_ARGUMENT)).toBe(true);
      const decided = answers.slice(200) as { overall_code: string }[];
      expect(decided.filter((answer) => answer.overall_code === "OK")).toHaveLength(100);
      expect(decided.filter((answer) => answer.overall_code === "OVER_LIMIT")).toHaveLength(50);
    } finally {
      raw.close();
    }
  });

  it("honours the caller's deadline when the store stalls", async () => {
    const server = await startRlsServer({ limiter: new DelayedStore(20_000), config, port: 0, drainTimeoutMs: 100 });
    const client = rlsClient(server.address);
    opened.push({ server, client });
    const startedMs = Date.now();
    await expect(client.ask("slow", [d(["user", "u"])], { deadlineMs: 300 })).rejects.toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    expect(Date.now() - startedMs).toBeLessThan(10_000);
  });

  it("lets a call in flight finish when it closes, then refuses new ones", async () => {
    const store = new DelayedStore(300);
    const server = await startRlsServer({ limiter: store, config, port: 0 });
    const client = rlsClient(server.address);
    opened.push({ client });
    const inFlight = client.ask("slow", [d(["user", "u"])]);
    while (store.checks === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await server.close();
    expect((await inFlight).overall_code).toBe("OK");
    await expect(client.ask("slow", [d(["user", "u"])], { deadlineMs: 2000 })).rejects.toMatchObject({ code: expect.any(Number) });
  });

  it("speaks TLS with --rls-tls-cert/--rls-tls-key", async () => {
    const dir = await mkdtemp(join(tmpdir(), "spillway-rls-tls-"));
    const [keyPath, certPath] = [join(dir, "key.pem"), join(dir, "cert.pem")];
    await promisify(execFile)("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", keyPath, "-out", certPath]);
    const [cert, key] = await Promise.all([readFile(certPath), readFile(keyPath)]);
    const server = await startRlsServer({ limiter: new MemoryStore(), config, port: 0, tls: { cert, key } });
    // The name checked against the certificate is "localhost": Node warns (DEP0123) at an IP address sent as a TLS server name.
    const client = rlsClient(server.address, grpc.credentials.createSsl(cert), { "grpc.ssl_target_name_override": "localhost" });
    opened.push({ server, client });
    expect((await client.ask("slow", [d(["user", "tls"])])).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 99 });
    const plain = rlsClient(server.address);
    await expect(plain.ask("slow", [d(["user", "tls"])], { deadlineMs: 3000 })).rejects.toMatchObject({ code: expect.any(Number) });
    plain.close();
  });
});
