import { execFile } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import type { CheckOptions, Decision, Policy } from "../../src/core/types.js";
import { ForwardingLimiter } from "../../src/limiter.js";
import { type RunningRlsServer, startRlsServer } from "../../src/node/rls-server.js";
import { parseRlsConfig } from "../../src/rls/config.js";
import { parseRlsText } from "../../src/rls/files.js";
import { MemoryStore } from "../../src/stores/memory.js";
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
