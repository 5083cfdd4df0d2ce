import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { retryAfterMsOf } from "../../../src/gateway/feedback.js";
import { createGateway } from "../../../src/gateway/gateway.js";
import { onBodyDone } from "../../../src/http/limit.js";
import { OriginWait } from "../../../src/gateway/origin-timeout.js";
import { type OriginRequest, clientResponse, newFieldRecord, originRequest, originUrlFor, withoutHopByHop } from "../../../src/gateway/proxy.js";
import { type Limiter, StoreUnavailableError } from "../../../src/core/limiter.js";
import { MemoryStore } from "../../../src/stores/memory.js";

describe("proxy helpers", () => {
  it("drops hop-by-hop fields and every field Connection names", () => {
    const headers = withoutHopByHop(new Headers({ connection: "close, X-Secret", "x-secret": "1", te: "trailers", "x-kept": "1", "content-length": "5" }));
    expect([...headers.keys()].sort()).toEqual(["content-length", "x-kept"]);
  });

  it("joins the origin's base path and the request's path and query", () => {
    expect(originUrlFor(new URL("https://api.example.com"), new URL("http://gw/a/b?x=1"))).toBe("https://api.example.com/a/b?x=1");
    expect(originUrlFor(new URL("https://api.example.com/base/"), new URL("http://gw/a?x=1"))).toBe("https://api.example.com/base/a?x=1");
  });

  it("keeps status and headers, adds ours, joins RateLimit lists", () => {
    const origin = new Response("x", { status: 201, statusText: "Made", headers: { ratelimit: '"own";r=1;t=1', "x-a": "1" } });
    const response = clientResponse(origin, { RateLimit: '"ours";r=2;t=3', "Retry-After": "5" });
    expect(response.status).toBe(201);
    expect(response.statusText).toBe("Made");
    expect(response.headers.get("ratelimit")).toBe('"own";r=1;t=1, "ours";r=2;t=3');
    expect(response.headers.get("x-a")).toBe("1");
  });

  it("treats an answer whose headers are a record (the Node origin client's) like one with Headers", async () => {
    const fields = newFieldRecord();
    Object.assign(fields, { connection: "close, x-hop", "x-hop": "1", "keep-alive": "timeout=9", ratelimit: '"own";r=1;t=1', constructor: "kept", "x-a": "1" });
    const response = clientResponse({ status: 201, statusText: "Made", headers: fields, body: null }, { RateLimit: '"ours";r=2;t=3', "Retry-After": "5" });
    expect(response.status).toBe(201);
    expect([...response.headers.keys()].sort()).toEqual(["constructor", "ratelimit", "retry-after", "x-a"]);
    expect(response.headers.get("ratelimit")).toBe('"own";r=1;t=1, "ours";r=2;t=3');
    expect(response.headers.get("retry-after")).toBe("5");
  });

  it("builds the forwarded request's Headers only when asked, without hop-by-hop fields or Host", () => {
    const forwarded = originRequest(new Request("http://gw/a", { headers: { host: "gw", connection: "x-hop", "x-hop": "1", te: "trailers", "x-kept": "1" } }), "http://origin/a", new OriginWait(new AbortController().signal, 1000));
    expect({ ...forwarded.headerFields }).toEqual({ "x-kept": "1" });
    expect([...forwarded.headers.keys()]).toEqual(["x-kept"]);
  });

  it("never gives a 204 or 304 a body", () => {
    expect(clientResponse(new Response(null, { status: 304 }), {}).body).toBeNull();
  });

  it("reads Retry-After as seconds or an HTTP date", () => {
    const nowMs = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMsOf("120", nowMs)).toBe(120_000);
    expect(retryAfterMsOf("Thu, 01 Jan 2026 00:00:30 GMT", nowMs)).toBe(30_000);
    expect(retryAfterMsOf("0", nowMs)).toBeUndefined();
    expect(retryAfterMsOf("Wed, 31 Dec 2025 00:00:00 GMT", nowMs)).toBeUndefined();
    expect(retryAfterMsOf("soon", nowMs)).toBeUndefined();
    expect(retryAfterMsOf(null, nowMs)).toBeUndefined();
    expect(retryAfterMsOf("999999999", nowMs)).toBe(86_400_000);
  });
});

describe("onBodyDone", () => {
  const stream = (chunks: string[], fail = false) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
        if (fail) controller.error(new Error("reset"));
        else controller.close();
      },
    });

  it("runs once when the body ends, errors, or is cancelled", async () => {
    let calls = 0;
    await new Response(onBodyDone(stream(["a", "b"]), () => calls++)).text();
    expect(calls).toBe(1);
    await expect(new Response(onBodyDone(stream(["a"], true), () => calls++)).text()).rejects.toThrow("reset");
    expect(calls).toBe(2);
    const cancelled = onBodyDone(stream(["a", "b"]), () => calls++);
    await cancelled.cancel();
    await cancelled.cancel().catch(() => {});
    expect(calls).toBe(3);
  });
});

describe("gateway edge cases", () => {
  const seen: OriginRequest[] = [];
  const config = parseConfig({ origin: "http://origin.test/base", policies: [], routes: [] });
  const gateway = createGateway({
    config,
    limiter: new MemoryStore(),
    clientIpOf: () => "192.0.2.1",
    fetchOrigin: async (request) => {
      seen.push(request);
      return new Response(null, { status: 302, headers: { location: "/elsewhere" } });
    },
  });

  it("refuses a request framed by both Transfer-Encoding and Content-Length", async () => {
    const response = await gateway.fetch(new Request("http://gw/x", { method: "POST", body: "hello", headers: { "transfer-encoding": "chunked", "content-length": "5" } }));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ detail: expect.stringContaining("Transfer-Encoding and Content-Length") });
  });

  it("passes redirects back instead of following them, and sends no body for GET", async () => {
    const response = await gateway.fetch(new Request("http://gw/x?y=1", { headers: { host: "gw" } }));
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/elsewhere");
    const forwarded = seen.at(-1)!;
    expect(forwarded).toMatchObject({ url: "http://origin.test/base/x?y=1", method: "GET", body: null });
    expect(forwarded.headers.get("host")).toBeNull();
  });
});

describe("gateway when the store is down", () => {
  const down: Limiter = Object.assign(new MemoryStore(), {
    check: async () => {
      throw new StoreUnavailableError("connection refused");
    },
  });
  const gatewayWith = (failMode: string, dryRun = false) =>
    createGateway({
      config: parseConfig({
        origin: "http://origin.test",
        policies: [{ name: "p", limit: 5, period: "1m", failMode }],
        routes: [{ match: { path: "/*" }, key: "const:all", policies: ["p"], dryRun }],
      }),
      limiter: down,
      clientIpOf: () => "192.0.2.1",
      log: () => {},
      fetchOrigin: async () => new Response("origin"),
    });

  it("answers 503 for failMode closed, never 500", async () => {
    const response = await gatewayWith("closed").fetch(new Request("http://gw/x"));
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ status: 503, detail: expect.stringContaining("connection refused") });
  });

  it("admits and says so for failMode open", async () => {
    const response = await gatewayWith("open").fetch(new Request("http://gw/x"));
    expect(response.status).toBe(200);
    expect(response.headers.get("spillway-failed-open")).toBe("true");
  });

  it("lets a dry-run route pass whatever the failMode", async () => {
    const response = await gatewayWith("closed", true).fetch(new Request("http://gw/x"));
    expect(response.status).toBe(200);
    expect(response.headers.get("spillway-dry-run")).toBe("error");
  });
});

describe("OriginWait", () => {
  it("a wait never raced leaves no unhandled rejection when its clock runs out, and still times out a later answer", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const wait = new OriginWait(new AbortController().signal, 20);
      await new Promise((resolve) => setTimeout(resolve, 80));
      // Unhandled rejections are reported after the microtask queue drains: give it a turn.
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      expect(wait.signal.aborted).toBe(true);
      await expect(wait.answer(new Promise(() => {}))).rejects.toThrow("the origin sent nothing for 20 ms");
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
