import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Rig, startRig } from "./proxy-rig.js";

const LIMIT = 100; // the docs' config: 100 per window per x-api-key (the rig makes the window an hour)

async function get(url: string, key?: string): Promise<{ status: number; headers: Headers; body: string }> {
  const response = await fetch(url, { headers: key === undefined ? {} : { "x-api-key": key } });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

/** A request to Spillway from a loopback address that is not the proxy's (trustProxy lists 127.0.0.1 and ::1). */
function fromUntrusted(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, localAddress: "127.0.0.2", path: "/v1/forward-auth", headers: { "x-forwarded-method": "GET", "x-forwarded-uri": "/api/items", "x-api-key": "k" } }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

const expectRateLimitFields = (headers: Headers) => {
  expect(headers.get("ratelimit")).toMatch(/^"per-minute";r=\d+;t=\d+$/);
  expect(headers.get("ratelimit-policy")).toMatch(/^"per-minute";q=100;w=3600$/);
};

for (const kind of ["nginx", "caddy"] as const) {
  describe(`${kind} in front of an origin, spillway serve deciding (docs/proxies.md's config)`, () => {
    let rig: Rig;
    beforeAll(async () => {
      rig = await startRig(kind);
    }, 15_000);
    afterAll(async () => {
      await rig?.close();
    });
    const seenFor = (key: string) => rig.seen.filter((request) => request.key === key).length;

    it("admits exactly the limit of 1,000 requests at once; the origin sees exactly those", async () => {
      const answers = await Promise.all(Array.from({ length: 1000 }, () => get(`${rig.proxyUrl}/api/items?page=2`, "burst-key")));
      const admitted = answers.filter((answer) => answer.status === 200);
      const refused = answers.filter((answer) => answer.status === 429);
      expect([admitted.length, refused.length]).toEqual([LIMIT, 1000 - LIMIT]);
      expect(seenFor("burst-key")).toBe(LIMIT);
      for (const answer of admitted) {
        expect(answer.body).toBe("from the origin");
        expectRateLimitFields(answer.headers);
      }
      for (const answer of refused) {
        expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
        expectRateLimitFields(answer.headers);
        expect(answer.headers.get("ratelimit")).toMatch(/;r=0;/);
        expect(JSON.parse(answer.body)).toMatchObject({ status: 429, type: "https://iana.org/assignments/http-problem-types#quota-exceeded" });
      }
    }, 15_000);

    it("lets an allowed key through past the limit, refuses a denied one before the origin", async () => {
      const allowed = await Promise.all(Array.from({ length: LIMIT + 20 }, () => get(`${rig.proxyUrl}/api/batch`, "internal-batch")));
      expect(allowed.every((answer) => answer.status === 200)).toBe(true);
      expect(seenFor("internal-batch")).toBe(LIMIT + 20);
      const denied = await get(`${rig.proxyUrl}/api/items`, "leaked-key-7");
      expect(denied.status).toBe(403);
      expect(seenFor("leaked-key-7")).toBe(0);
    });

    it("refuses a routed request without its key (never lets it through uncounted), passes unrouted paths", async () => {
      const before = rig.seen.length;
      const missing = await get(`${rig.proxyUrl}/api/items`);
      expect(missing.status).toBe(kind === "nginx" ? 403 : 400); // nginx's auth_request passes 401 and 403 only
      expect(rig.seen.length).toBe(before);
      const unrouted = await get(`${rig.proxyUrl}/elsewhere`);
      expect(unrouted.status).toBe(200);
      expect(rig.seen.at(-1)).toEqual({ key: "", path: "/elsewhere" });
    });

    it("refuses forwarded fields from an address trustProxy does not list, naming it", async () => {
      const answer = await fromUntrusted(rig.spillway.port);
      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.body).detail).toContain("trustProxy");
    });
  });
}
