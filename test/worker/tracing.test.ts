import { exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import { createGateway } from "../../src/gateway/gateway.js";
import { traceLimiter } from "../../src/observe/traced-limiter.js";
import { MemoryStore } from "../../src/stores/memory.js";
import { type RuntimeSpan, type RuntimeTracing, tracedFetch, workerTracer } from "../../src/worker/tracing.js";

// Workers tracing: Spillway's spans go through the runtime's `tracing` (cloudflare:workers).
// Locally workerd has the API but records nothing (no request is sampled); the platform's
// recording is stood in for by `recordingTracing`, which keeps what the spans were told.

interface Recorded {
  name: string;
  parent: string | undefined;
  attributes: Record<string, string | number | boolean>;
  ended: boolean;
}

/** The platform's tracing, as its custom-span API behaves: enterSpan makes a span active for its callback, startSpan nests under the active one. */
function recordingTracing(): { tracing: RuntimeTracing; spans: Recorded[] } {
  const spans: Recorded[] = [];
  const root = span("invocation", undefined);
  let activeSpan: { span: RuntimeSpan; record: Recorded } = root;
  function span(name: string, parent: Recorded | undefined) {
    const record: Recorded = { name, parent: parent?.name, attributes: {}, ended: false };
    spans.push(record);
    const runtimeSpan: RuntimeSpan = {
      isTraced: true,
      setAttribute: (key, value) => void (record.attributes[key] = value),
      end: () => void (record.ended = true),
    };
    return { span: runtimeSpan, record };
  }
  const tracing: RuntimeTracing = {
    enterSpan(name, run) {
      const outer = activeSpan;
      activeSpan = span(name, outer.record);
      const entered = activeSpan;
      const result = run(entered.span);
      const done = () => {
        entered.record.ended = true;
        activeSpan = outer;
      };
      if (result instanceof Promise) return result.finally(done) as typeof result;
      done();
      return result;
    },
    startSpan: (name) => span(name, activeSpan.record).span,
    getActiveSpan: () => activeSpan.span,
  };
  return { tracing, spans };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("traces on the Worker", () => {
  it("finds workerd's tracing, and serves a request it does not sample without a span of Spillway's", async () => {
    const tracer = workerTracer();
    expect(tracer).toBeDefined();
    expect(tracer!.sampled()).toBe(false);
    const answer = await exports.default.fetch("https://spillway.test/healthz");
    expect(answer.status).toBe(200);
  });

  it("nothing without a runtime tracer: workerTracer is undefined, the limiter is the store itself", () => {
    const store = new MemoryStore();
    expect(workerTracer({} as RuntimeTracing)).toBeUndefined();
    // An older runtime's tracing without custom spans is none either.
    expect(workerTracer({ getActiveSpan: () => undefined } as unknown as RuntimeTracing)).toBeUndefined();
    expect(traceLimiter(store, undefined)).toBe(store);
  });

  it("a sampled gateway request is a span with the route, policies, key source, outcome and store, its store call a child, and no key", async () => {
    const { tracing, spans } = recordingTracing();
    const tracer = workerTracer(tracing)!;
    const config = parseConfig({
      origin: "http://origin.test",
      policies: [{ name: "one-per-hour", algorithm: "fixed-window", limit: 1, period: "1h" }],
      routes: [{ match: { path: "/api" }, key: "header:x-api-key", policies: ["one-per-hour"] }],
    });
    vi.spyOn(globalThis, "fetch").mockImplementation(async () => new Response("from origin"));
    const app = createGateway({ config, limiter: traceLimiter(new MemoryStore(), tracer), clientIpOf: () => "203.0.113.7", tracer });
    const send = () => {
      const request = new Request("https://spillway.test/api", { headers: { "x-api-key": "secret-worker-key" } });
      return tracedFetch(tracer, request, async () => app.fetch(request));
    };
    expect([(await send()).status, (await send()).status]).toEqual([200, 429]);
    const requests = spans.filter((span) => span.name === "spillway.gateway");
    expect(requests.map((span) => [span.parent, span.ended, span.attributes["http.response.status_code"], span.attributes["spillway.outcome"]])).toEqual([
      ["invocation", true, 200, "allowed"],
      ["invocation", true, 429, "denied"],
    ]);
    expect(requests[0]!.attributes).toMatchObject({ "spillway.route": "0", "spillway.policies": "one-per-hour", "spillway.key.source": "the x-api-key header", "spillway.store": "memory" });
    const store = spans.filter((span) => span.name === "spillway.store check");
    expect(store.map((span) => [span.parent, span.ended])).toEqual([
      ["spillway.gateway", true],
      ["spillway.gateway", true],
    ]);
    expect(spans.flatMap((span) => Object.values(span.attributes)).filter((value) => String(value).includes("secret-worker-key"))).toEqual([]);
  });
});
