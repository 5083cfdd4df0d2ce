import { exports } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type OriginHandler, deferred, uniqueIp, waitFor } from "./gateway-helpers.js";

// The deployed shape: the Worker's own fetch handler with the bundled spillway.config.json
// (origin http://127.0.0.1:8788, route /api/* keyed by ip, policy "gateway-demo": GCRA 3 per 10 s).
// The origin is an outbound mock: global fetch is replaced for the duration of each test.
let origin: OriginHandler;
let originRequests: Request[] = [];
beforeEach(() => {
  originRequests = [];
  origin = () => new Response("from origin", { headers: { "x-origin": "yes" } });
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    originRequests.push(request);
    return origin(request);
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

const send = (path: string, init: RequestInit & { ip?: string } = {}) => {
  const headers = new Headers(init.headers);
  if (init.ip) headers.set("cf-connecting-ip", init.ip);
  return exports.default.fetch(`https://spillway.test${path}`, { ...init, headers });
};

describe("Worker gateway (bundled config)", () => {
  it("proxies /api/* to the origin: 200s, then 429 with headers and a problem body", async () => {
    const ip = uniqueIp();
    for (let i = 0; i < 3; i++) {
      const response = await send("/api/hello?x=1", { ip });
      expect(response.status).toBe(200);
      expect(response.headers.get("x-origin")).toBe("yes");
      expect(response.headers.get("ratelimit-policy")).toBe('"gateway-demo";q=3;w=10');
      expect(response.headers.get("ratelimit")).toMatch(new RegExp(`^"gateway-demo";r=${2 - i};t=\\d+$`));
      expect(await response.text()).toBe("from origin");
    }
    expect(originRequests.map((request) => request.url)).toEqual(Array(3).fill("http://127.0.0.1:8788/api/hello?x=1"));
    const denied = await send("/api/hello", { ip });
    expect(denied.status).toBe(429);
    expect(Number(denied.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(denied.headers.get("content-type")).toBe("application/problem+json");
    expect(await denied.json()).toMatchObject({ type: "https://iana.org/assignments/http-problem-types#quota-exceeded", status: 429, "violated-policies": ["gateway-demo"] });
    expect(originRequests).toHaveLength(3);
  });

  it("keys by CF-Connecting-IP and ignores spoofed X-Forwarded-For, X-Real-IP, True-Client-IP", async () => {
    const ip = uniqueIp();
    const statuses = [];
    for (const name of ["x-forwarded-for", "x-real-ip", "true-client-ip", "x-forwarded-for"]) {
      statuses.push((await send("/api/x", { ip, headers: { [name]: uniqueIp() } })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it("answers 400 when Cloudflare gave no client address", async () => {
    const response = await send("/api/x");
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ detail: expect.stringContaining("client address") });
  });

  it("passes unmatched paths through unlimited, and /v1 and /healthz stay Spillway's", async () => {
    const ip = uniqueIp();
    for (let i = 0; i < 5; i++) expect((await send("/static/a.css", { ip })).status).toBe(200);
    expect((await send("/healthz")).status).toBe(200);
    expect(originRequests).toHaveLength(5);
  });

  it("answers 502 with a problem body when the origin cannot be reached", async () => {
    origin = () => {
      throw new TypeError("Network connection lost.");
    };
    const response = await send("/api/x", { ip: uniqueIp() });
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ status: 502, detail: expect.stringContaining("127.0.0.1:8788") });
  });

  it("streams an upload through without buffering it", async () => {
    const chunkBytes = 64 * 1024;
    const chunks = 6;
    // The origin runs in the Worker's request context: it reports progress through plain
    // data (promises cannot be settled across request contexts in workerd).
    let receivedBytes = 0;
    origin = async (request) => {
      const reader = request.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        receivedBytes += value.byteLength;
      }
      return new Response(String(receivedBytes));
    };
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const answer = send("/api/upload", { ip: uniqueIp(), method: "POST", body: readable, duplex: "half" } as RequestInit);
    const writer = writable.getWriter();
    for (let i = 1; i <= chunks; i++) {
      await writer.write(new Uint8Array(chunkBytes).fill(i));
      // Lock-step: a buffering gateway would hold chunk n until the upload ends.
      await waitFor(() => receivedBytes >= i * chunkBytes);
    }
    await writer.close();
    const response = await answer;
    expect(await response.text()).toBe(String(chunks * chunkBytes));
  });

  it("streams a download through without buffering it", async () => {
    const chunks = 6;
    const delivered = Array.from({ length: chunks }, () => deferred());
    origin = () => {
      let i = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (i > 0) await delivered[i - 1]!.promise;
          if (i === chunks) return controller.close();
          controller.enqueue(new Uint8Array(64 * 1024).fill(i));
          i++;
        },
      });
      return new Response(body);
    };
    const response = await send("/api/download", { ip: uniqueIp() });
    const reader = response.body!.getReader();
    let total = 0;
    let next = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      while (next < chunks && total >= (next + 1) * 64 * 1024) delivered[next++]!.resolve();
    }
    expect(total).toBe(chunks * 64 * 1024);
  });

  it("strips hop-by-hop headers both ways, including those Connection names", async () => {
    origin = () =>
      new Response("ok", { headers: { connection: "x-origin-hop", "x-origin-hop": "1", "keep-alive": "timeout=99", "proxy-authenticate": "Basic", trailer: "x-t", upgrade: "h2c", "x-kept": "yes" } });
    const response = await send("/api/hop", {
      ip: uniqueIp(),
      headers: { connection: "x-client-hop", "x-client-hop": "1", "keep-alive": "timeout=5", te: "trailers", "proxy-authorization": "Basic eA==", "proxy-connection": "keep-alive", "x-kept": "yes" },
    });
    const forwarded = originRequests[0]!.headers;
    for (const name of ["x-client-hop", "keep-alive", "te", "proxy-authorization", "proxy-connection", "connection"]) expect(forwarded.get(name), name).toBeNull();
    expect(forwarded.get("x-kept")).toBe("yes");
    for (const name of ["x-origin-hop", "keep-alive", "proxy-authenticate", "trailer", "upgrade", "connection"]) expect(response.headers.get(name), name).toBeNull();
    expect(response.headers.get("x-kept")).toBe("yes");
  });

  it("serves the gateway on the RPC entrypoint's fetch too", async () => {
    const response = await exports.SpillwayRpc.fetch("https://spillway.test/api/rpc-fetch", { headers: { "cf-connecting-ip": uniqueIp() } });
    expect(response.status).toBe(200);
    expect(response.headers.get("ratelimit-policy")).toBe('"gateway-demo";q=3;w=10');
  });
});
