import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../../scripts/free-port.js";
import * as grpc from "@grpc/grpc-js";
import { loadRlsProtos } from "../../../../src/node/grpc/server.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./otlp-receiver.js";

// `spillway serve` with the standard OpenTelemetry variables, as an operator starts it: spans
// reach an OTLP/HTTP receiver started here, in the client's trace, and the origin is sent a
// child traceparent. Each process loads the whole CLI: they start side by side.

const BIN = new URL("../../../../bin/spillway.mjs", import.meta.url).pathname;
const TOKEN = "trace-token";
/** Values that must never reach a span: the gateway's key and a /v1 key. */
const GATEWAY_KEY = "secret-key-7f3a";
const API_KEY = "user-secret-42";

const traceparent = (traceId: string, spanId: string, flags = "01") => `00-${traceId}-${spanId}-${flags}`;
const hexId = (bytes: number) => [...crypto.getRandomValues(new Uint8Array(bytes))].map((byte) => byte.toString(16).padStart(2, "0")).join("");

interface Origin {
  url: string;
  /** The traceparent and tracestate each request brought, in order. */
  seen: { traceparent?: string; tracestate?: string }[];
  close(): void;
}

function startOrigin(): Promise<Origin> {
  const seen: Origin["seen"] = [];
  const server = http.createServer((req, res) => {
    seen.push({ traceparent: req.headers.traceparent as string | undefined, tracestate: req.headers.tracestate as string | undefined });
    res.end("origin");
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => server.close() })));
}

interface Serving {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** SIGTERM, and the exit code: a clean shutdown flushes the spans still buffered. */
  stop(): Promise<number | null>;
}

async function startServe(origin: string, env: Record<string, string>, args: string[] = []): Promise<Serving> {
  const dir = await mkdtemp(join(tmpdir(), "spillway-traces-"));
  const config = join(dir, "spillway.config.json");
  await writeFile(join(dir, "rls.yaml"), "domain: edge\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n");
  await writeFile(
    config,
    JSON.stringify({
      origin,
      policies: [{ name: "two-per-hour", algorithm: "fixed-window", limit: 2, period: "1h" }],
      routes: [{ match: { path: "/api" }, key: "header:x-api-key", policies: ["two-per-hour"] }],
    }),
  );
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("OTEL_") && !name.startsWith("TRACING_")));
  const child = spawn(process.execPath, [BIN, "serve", "--config", config, "--store", "memory", "--port", "0", "--no-metrics", ...args.map((arg) => arg.replace("RLS_CONFIG", join(dir, "rls.yaml")))], { env: { ...base, SPILLWAY_TOKEN: TOKEN, OTEL_BSP_SCHEDULE_DELAY: "50", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (!match) return;
      clearInterval(timer);
      resolve(match[1]!);
    }, 20);
    void exit.then(() => {
      clearInterval(timer);
      reject(new Error(`spillway serve exited: ${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    stop: () => {
      child.kill("SIGTERM");
      return exit;
    },
  };
}

const gatewayGet = (serving: Serving, parent?: string) => fetch(`${serving.url}/api`, { headers: { "x-api-key": GATEWAY_KEY, ...(parent ? { traceparent: parent, tracestate: "vendor=abc" } : {}) } });
/** ShouldRateLimit on `spillway serve --rls-port`, with a traceparent in its metadata (as Envoy sends it). */
function askRls(port: number, parent: string, user: string): Promise<{ overall_code: string }> {
  const { RateLimitService } = loadRlsProtos();
  const client = new RateLimitService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("traceparent", parent);
  return new Promise((resolve, reject) => {
    const call = (client as unknown as Record<string, (...args: unknown[]) => void>).ShouldRateLimit!;
    call.call(client, { domain: "edge", descriptors: [{ entries: [{ key: "user", value: user }] }] }, metadata, { deadline: Date.now() + 10_000 }, (error: Error | null, answer: { overall_code: string }) => {
      client.close();
      if (error) reject(error);
      else resolve(answer);
    });
  });
}

const apiCheck = (serving: Serving, parent: string) =>
  fetch(`${serving.url}/v1/check`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, traceparent: parent }, body: JSON.stringify({ key: API_KEY, policy: "two-per-hour" }) });

/** No span attribute, of any span, holds a key. */
function expectNoKeys(spans: readonly ReceivedSpan[]): void {
  const values = spans.flatMap((span) => Object.values(span.attributes).map(String));
  expect(values.filter((value) => value.includes(GATEWAY_KEY) || value.includes(API_KEY))).toEqual([]);
}

describe("spillway serve with OTEL_TRACES_EXPORTER=otlp", { timeout: 60_000 }, () => {
  let receiver: OtlpReceiver;
  let origin: Origin;
  beforeAll(async () => {
    [receiver, origin] = await Promise.all([startOtlpReceiver(), startOrigin()]);
  });
  afterAll(async () => {
    origin?.close();
    await receiver?.close();
  });

  it("exports the gateway's, /v1/check's and --rls-port's spans in the client's traces (protobuf and JSON), and sends the origin a child traceparent", async () => {
    const rlsPort = await freePort();
    const [protobufServe, jsonServe] = await Promise.all([
      startServe(origin.url, { OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "edge-proto" }, ["--rls-port", String(rlsPort), "--rls-config", "RLS_CONFIG"]),
      startServe(origin.url, { OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_SERVICE_NAME: "edge-json" }),
    ]);
    try {
      const [traceId, clientSpanId] = [hexId(16), hexId(8)];
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push((await gatewayGet(protobufServe, traceparent(traceId, clientSpanId))).status);
      expect(answers).toEqual([200, 200, 429]);
      const [apiTraceId, apiParentId] = [hexId(16), hexId(8)];
      expect((await apiCheck(protobufServe, traceparent(apiTraceId, apiParentId))).status).toBe(200);
      const [rlsTraceId, rlsParentId] = [hexId(16), hexId(8)];
      expect((await askRls(rlsPort, traceparent(rlsTraceId, rlsParentId), API_KEY)).overall_code).toBe("OK");
      const [jsonTraceId, jsonParentId] = [hexId(16), hexId(8)];
      expect((await gatewayGet(jsonServe, traceparent(jsonTraceId, jsonParentId))).status).toBe(200);

      const spans = await receiver.waitFor((all) => all.filter((span) => span.name === "spillway.gateway").length >= 4 && all.some((span) => span.name === "spillway.api /v1/check") && all.some((span) => span.traceId === rlsTraceId && span.name.startsWith("spillway.store")));
      const gateway = spans.filter((span) => span.name === "spillway.gateway" && span.traceId === traceId);
      expect(gateway).toHaveLength(3);
      for (const span of gateway) {
        // A server span whose parent is the client's span, in the client's trace.
        expect([span.kind, span.parentSpanId, span.encoding, span.resource["service.name"]]).toEqual([2, clientSpanId, "protobuf", "edge-proto"]);
        expect(span.attributes).toMatchObject({ "spillway.route": "0", "spillway.policies": "two-per-hour", "spillway.store": "memory", "spillway.key.source": "the x-api-key header", "http.request.method": "GET" });
        expect(span.attributes["spillway.store.duration_ms"]).toBeTypeOf("number");
      }
      expect(gateway.map((span) => [span.attributes["http.response.status_code"], span.attributes["spillway.outcome"]])).toEqual([
        [200, "allowed"],
        [200, "allowed"],
        [429, "denied"],
      ]);
      // The store call is a child of the gateway's span.
      const store = spans.filter((span) => span.name === "spillway.store check" && span.traceId === traceId);
      expect(store.map((span) => span.parentSpanId).sort()).toEqual(gateway.map((span) => span.spanId).sort());
      expect(store[0]!.attributes).toMatchObject({ "spillway.store": "memory", "spillway.policies": "two-per-hour" });

      // The origin got a traceparent in the same trace whose parent is the gateway's span (not the client's), and the tracestate.
      const forwarded = origin.seen.slice(0, 2);
      expect(forwarded.map((seen) => seen.traceparent?.split("-")[1])).toEqual([traceId, traceId]);
      expect(forwarded.map((seen) => seen.traceparent?.split("-")[2]).sort()).toEqual(gateway.slice(0, 2).map((span) => span.spanId).sort());
      expect(forwarded.map((seen) => seen.tracestate)).toEqual(["vendor=abc", "vendor=abc"]);

      const api = spans.find((span) => span.name === "spillway.api /v1/check")!;
      expect([api.traceId, api.parentSpanId, api.kind]).toEqual([apiTraceId, apiParentId, 2]);
      expect(api.attributes).toMatchObject({ "http.route": "/v1/check", "spillway.outcome": "allowed", "spillway.store": "memory", "spillway.policies": "two-per-hour", "http.response.status_code": 200 });

      const rls = spans.find((span) => span.name === "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")!;
      expect([rls.traceId, rls.parentSpanId, rls.attributes["ratelimit.domain"], rls.attributes["ratelimit.descriptor_keys"], rls.attributes["ratelimit.overall_code"]]).toEqual([rlsTraceId, rlsParentId, "edge", "user", "OK"]);
      expect(spans.find((span) => span.traceId === rlsTraceId && span.name.startsWith("spillway.store"))!.parentSpanId).toBe(rls.spanId);

      const json = spans.find((span) => span.traceId === jsonTraceId && span.name === "spillway.gateway")!;
      expect([json.encoding, json.parentSpanId, json.resource["service.name"], json.attributes["spillway.outcome"]]).toEqual(["json", jsonParentId, "edge-json", "allowed"]);
      expectNoKeys(spans);
      expect(receiver.refused).toEqual([]);
    } finally {
      expect(await Promise.all([protobufServe.stop(), jsonServe.stop()])).toEqual([0, 0]);
    }
  });

  it("exports nothing with a sampler of 0 or with tracing off; off, the client's traceparent goes to the origin as it came; a bad value exits 2 naming it", async () => {
    const before = receiver.spans.length;
    // Started beside the others (each process loads the whole CLI).
    const refused = startServe(origin.url, { OTEL_TRACES_EXPORTER: "otlp", OTEL_TRACES_SAMPLER: "jaeger_remote" }).then(
      () => "started",
      (error: Error) => error.message,
    );
    const [sampledOut, off] = await Promise.all([
      startServe(origin.url, { OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" }),
      startServe(origin.url, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }),
    ]);
    const [traceId, clientSpanId] = [hexId(16), hexId(8)];
    const seenFrom = origin.seen.length;
    expect((await gatewayGet(sampledOut, traceparent(traceId, clientSpanId))).status).toBe(200);
    expect((await apiCheck(sampledOut, traceparent(traceId, clientSpanId))).status).toBe(200);
    expect((await gatewayGet(off, traceparent(traceId, clientSpanId))).status).toBe(200);
    expect((await apiCheck(off, traceparent(traceId, clientSpanId))).status).toBe(200);
    // A clean stop flushes whatever was buffered: nothing was.
    expect(await Promise.all([sampledOut.stop(), off.stop()])).toEqual([0, 0]);
    expect(receiver.spans.slice(before)).toEqual([]);
    const [sampledOutSeen, offSeen] = origin.seen.slice(seenFrom);
    // Not sampled, the origin still gets a child of the gateway's (unrecorded) span, marked not sampled.
    expect(sampledOutSeen!.traceparent).toMatch(new RegExp(`^00-${traceId}-(?!${clientSpanId})[0-9a-f]{16}-00$`));
    expect(offSeen!.traceparent).toBe(traceparent(traceId, clientSpanId));
    expect(await refused).toMatch(/OTEL_TRACES_SAMPLER: must be one of always_on, .*got "jaeger_remote"/);
  });
});
