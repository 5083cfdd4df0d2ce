import { type ChildProcess, spawn } from "node:child_process";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/free-port.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { loadRlsProtos } from "../../src/node/grpc/server.js";
import { type OtlpReceiver, startOtlpReceiver } from "../unit/node/tracing/otlp-receiver.js";
import { runtimeRoot, waitFor } from "./rls-env-helpers.js";

// `spillway rls` with the reference's TRACING_* variables (envoyproxy/ratelimit settings.go):
// each ShouldRateLimit is a span in the caller's trace (traceparent in the gRPC metadata, as
// Envoy sends it), with the domain, descriptor keys and overall code, and its store call a child.

const BIN = new URL("../../bin/spillway.mjs", import.meta.url).pathname;
const LIMITS = "domain: edge\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 1 }\n";
/** A descriptor value: it may be a credential, and must reach no span. */
const USER = "alice@example.com";

function spawnRls(env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, [BIN, "rls"], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk) => (output += chunk));
  child.stderr?.on("data", (chunk) => (output += chunk));
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exit, output: () => output };
}

/** ShouldRateLimit with a traceparent in its metadata. */
function ask(address: string, parent: string | undefined): Promise<{ overall_code: string }> {
  const { RateLimitService } = loadRlsProtos();
  const client = new RateLimitService(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (parent) metadata.set("traceparent", parent);
  return new Promise((resolve, reject) => {
    const call = (client as unknown as Record<string, (...args: unknown[]) => void>).ShouldRateLimit!;
    call.call(client, { domain: "edge", descriptors: [{ entries: [{ key: "user", value: USER }] }] }, metadata, { deadline: Date.now() + 10_000 }, (error: Error | null, answer: { overall_code: string }) => {
      client.close();
      if (error) reject(error);
      else resolve(answer);
    });
  });
}

describe("spillway rls with TRACING_ENABLED=true", { timeout: 60_000 }, () => {
  let redis: RedisServer;
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    [redis, receiver] = await Promise.all([startRedis(), startOtlpReceiver()]);
  });
  afterAll(async () => {
    await redis?.stop();
    await receiver?.close();
  });

  it("exports each call's span in the caller's trace, with the domain, descriptor keys and overall code, and never a value; refuses grpc and a rate that is no number (exit 2)", async () => {
    // Started beside the one that serves (each process loads the whole CLI).
    const [grpcProtocol, badRate] = [spawnRls({ TRACING_ENABLED: "true", TRACING_EXPORTER_PROTOCOL: "grpc" }), spawnRls({ TRACING_ENABLED: "true", TRACING_SAMPLING_RATE: "half" })];
    const { root } = await runtimeRoot({ "edge.yaml": LIMITS });
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    const rls = spawnRls({
      REDIS_SOCKET_TYPE: "tcp",
      REDIS_URL: `127.0.0.1:${redis.port}`,
      REDIS_TIMEOUT: "2s",
      RUNTIME_ROOT: root,
      RUNTIME_SUBDIRECTORY: "ratelimit",
      GRPC_HOST: "127.0.0.1",
      GRPC_PORT: String(grpcPort),
      HOST: "127.0.0.1",
      PORT: String(httpPort),
      TRACING_ENABLED: "true",
      TRACING_SERVICE_NAME: "ratelimit-test",
      TRACING_SERVICE_NAMESPACE: "edge",
      TRACING_SERVICE_INSTANCE_ID: "pod-7",
      TRACING_SAMPLING_RATE: "1",
      TRACING_EXPORTER_PROTOCOL: "http",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: "50",
    });
    try {
      const health = await waitFor(
        () => fetch(`http://127.0.0.1:${httpPort}/healthcheck`).then((answer) => answer.status, () => 0),
        (status) => status === 200 || rls.child.exitCode !== null,
        30_000,
      );
      expect(health, rls.output()).toBe(200);
      // No TRACING_* variable is reported as ignored any more.
      expect(rls.output()).not.toContain("TRACING_");
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
      const parentId = "00f067aa0ba902b7";
      const address = `127.0.0.1:${grpcPort}`;
      expect((await ask(address, `00-${traceId}-${parentId}-01`)).overall_code).toBe("OK");
      expect((await ask(address, `00-${traceId}-${parentId}-01`)).overall_code).toBe("OVER_LIMIT");
      const spans = await receiver.waitFor((all) => all.filter((span) => span.name === "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit").length >= 2);
      const calls = spans.filter((span) => span.name === "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit");
      for (const call of calls) {
        expect([call.traceId, call.parentSpanId, call.kind, call.encoding]).toEqual([traceId, parentId, 2, "protobuf"]);
        expect(call.resource).toMatchObject({ "service.name": "ratelimit-test", "service.namespace": "edge", "service.instance.id": "pod-7" });
        expect(call.attributes).toMatchObject({ "ratelimit.domain": "edge", "ratelimit.descriptor_keys": "user", "rpc.system": "grpc", "rpc.grpc.status_code": 0 });
      }
      expect(calls.map((call) => call.attributes["ratelimit.overall_code"])).toEqual(["OK", "OVER_LIMIT"]);
      // The store call, a child of each.
      const store = spans.filter((span) => span.name.startsWith("spillway.store "));
      expect(store.map((span) => span.parentSpanId).sort()).toEqual(calls.map((call) => call.spanId).sort());
      expect(store[0]!.attributes["spillway.store"]).toBe("redis");
      const values = spans.flatMap((span) => Object.values(span.attributes).map(String));
      expect(values.filter((value) => value.includes(USER))).toEqual([]);
      expect(await Promise.all([grpcProtocol.exit, badRate.exit])).toEqual([2, 2]);
      expect(grpcProtocol.output()).toContain("TRACING_EXPORTER_PROTOCOL: OTLP over gRPC is not exported");
      expect(badRate.output()).toContain('TRACING_SAMPLING_RATE: must be a number from 0.0 to 1.0, got "half"');
    } finally {
      rls.child.kill("SIGTERM");
      expect(await rls.exit).toBe(0);
    }
  });
});
