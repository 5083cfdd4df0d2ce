import { exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { gatewayApp, uniqueIp } from "./gateway-helpers.js";

// The path policy on the Worker, deciding in the real Durable Objects, and the Worker's own
// fetch handler keeping Spillway's paths from the origin.
const gw = gatewayApp({
  origin: "https://origin.test",
  policies: [{ name: "three", algorithm: "gcra", limit: 3, period: "1h" }],
  routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["three"] }],
});
const seen: string[] = [];
gw.origin.handler = (request) => {
  seen.push(request.url);
  return new Response("origin");
};

/**
 * A request whose url is exactly `raw`: workerd hands a Worker the request line's path
 * unchanged (dot segments, "\"), which the Request constructor would normalize away.
 */
function rawRequest(raw: string, ip: string): Request {
  const request = new Request("https://gateway.test/placeholder", { headers: { "cf-connecting-ip": ip } });
  Object.defineProperty(request, "url", { value: raw });
  return request;
}

const BYPASSES = ["/API/x", "/Api/x", "/api%2Fx", "/api%252Fx", "/%2Fapi/x", "/api;p/x", "/api./x", "/api%00/x", "/api%20/x", "/api%5Cx", "/api%/x", "/%EF%BD%81pi/x"];

describe("Worker gateway: path policy", () => {
  it("sends none of the issue's spellings of /api/x to the origin once /api/* is spent: each is a 429 or a 400", async () => {
    const ip = uniqueIp();
    for (let i = 0; i < 3; i++) expect((await gw.send("/api/x", { ip })).status).toBe(200);
    const before = seen.length;
    for (const path of BYPASSES) {
      const response = await gw.send(path, { ip });
      await response.body?.cancel();
      expect([path, [400, 429].includes(response.status)]).toEqual([path, true]);
    }
    // As workerd delivers them: "\\" and "..;" have no safe canonical form, "x/../api" is /api.
    const raw = (url: string) => Promise.resolve(gw.app.fetch(rawRequest(`https://gateway.test${url}`, ip))).then((response) => response.status);
    expect(await raw("/api\\x")).toBe(400);
    expect(await raw("/api/..;/x")).toBe(400);
    expect(await raw("/x/../api/x")).toBe(429);
    expect(seen.slice(before)).toEqual([]);
  });

  it("counts other spellings against the same budget and forwards the canonical path, query kept", async () => {
    const ip = uniqueIp();
    const before = seen.length;
    expect((await gw.send("/API;v=1/x?q=1", { ip })).status).toBe(200);
    expect((await gw.app.fetch(rawRequest("https://gateway.test//x/../api/./y?q=2", ip))).status).toBe(200);
    expect((await gw.send("/%EF%BD%81pi/z", { ip })).status).toBe(200);
    expect((await gw.send("/api/x", { ip })).status).toBe(429);
    expect(seen.slice(before)).toEqual(["https://origin.test/API;v=1/x?q=1", "https://origin.test/api/y?q=2", "https://origin.test/%EF%BD%81pi/z"]);
  });

  it("refuses a path with no safe canonical form with a problem naming the reason", async () => {
    const response = await gw.send("/api%2Fx", { ip: uniqueIp() });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ status: 400, detail: expect.stringMatching(/no safe canonical form: .*%2F/) });
  });
});

describe("Worker: Spillway's own paths never reach the origin", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("answers a wrong method with 405 and Allow, other spellings with 404, and forwards the origin's own /v1 paths", async () => {
    const originUrls: string[] = [];
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      originUrls.push(new Request(input, init).url);
      return new Response("from origin");
    });
    const send = (path: string, init: RequestInit = {}) =>
      exports.default.fetch(`https://spillway.test${path}`, { ...init, headers: { authorization: "Bearer test-token", "cf-connecting-ip": uniqueIp(), ...init.headers } });
    const wrongMethod = await send("/v1/check");
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("POST");
    expect(await wrongMethod.json()).toMatchObject({ status: 405, title: "Method Not Allowed" });
    expect((await send("/healthz", { method: "DELETE" })).headers.get("allow")).toBe("GET, HEAD");
    for (const path of ["/V1/check", "/v1//check", "/v1/check;x"]) expect([path, (await send(path, { method: "POST", body: "{}" })).status]).toEqual([path, 404]);
    expect(originUrls).toEqual([]);
    expect((await send("/v1/users")).status).toBe(200);
    expect(originUrls).toEqual(["http://127.0.0.1:8788/v1/users"]);
  });
});
