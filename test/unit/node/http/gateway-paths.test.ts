import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayUnderTest, type Running, policies, rawExchange, startGateway, startOrigin } from "./gateway-helpers.js";

// The path policy on `spillway serve`: raw request lines (a client library would normalize
// dot segments and more before the gateway ever saw them) against a real origin on loopback.
let origin: Running & { server: http.Server };
let gateway: GatewayUnderTest;
const seen: string[] = [];
let users = 0;

beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    seen.push(req.url ?? "");
    res.end("origin");
  });
  gateway = await startGateway({
    origin: origin.url,
    policies,
    routes: [
      { match: { path: "/api/*" }, key: "header:x-user", policies: ["three"] },
      { match: { path: "/Exact/*", caseSensitive: true }, key: "header:x-user", policies: ["three"] },
      { match: { path: "/files/:name" }, key: "path", policies: ["three"] },
    ],
  });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});

const newUser = () => `paths-${++users}`;

/** One raw request; its status and body. */
async function send(method: string, target: string, headers: Record<string, string> = {}, payload = ""): Promise<{ status: number; body: string; head: string }> {
  const all = { host: "gw", connection: "close", ...headers, ...(payload ? { "content-length": String(payload.length) } : {}) };
  const fields = Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`);
  const answer = await rawExchange(gateway.port, `${method} ${target} HTTP/1.1\r\n${fields.join("")}\r\n${payload}`);
  const [head = "", body = ""] = answer.split("\r\n\r\n");
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), head, body };
}

const BYPASSES = ["/API/x", "/Api/x", "/api%2Fx", "/api%252Fx", "/%2Fapi/x", "/api;p/x", "/api./x", "/api%00/x", "/api%20/x", "/api%5Cx", "/api%/x", "/%EF%BD%81pi/x"];

describe("Node gateway: path policy", () => {
  it("sends none of the issue's spellings of /api/x to the origin once /api/* is spent: each is a 429 or a 400", async () => {
    const user = newUser();
    for (let i = 0; i < 3; i++) expect((await send("GET", "/api/x", { "x-user": user })).status).toBe(200);
    const before = seen.length;
    for (const path of BYPASSES) {
      const { status } = await send("GET", path, { "x-user": user });
      expect([path, [400, 429].includes(status)]).toEqual([path, true]);
    }
    expect((await send("GET", "/api\\x", { "x-user": user })).status).toBe(400);
    expect((await send("GET", "//api/./y/../x", { "x-user": user })).status).toBe(429);
    expect(seen.slice(before)).toEqual([]);
  });

  it("counts every spelling that an origin may serve as /api/x against the one budget", async () => {
    const user = newUser();
    for (const path of ["/API/x", "/api;jsessionid=1/x", "/%EF%BD%81pi/x"]) expect((await send("GET", path, { "x-user": user })).status).toBe(200);
    expect((await send("GET", "/api/x", { "x-user": user })).status).toBe(429);
  });

  it("refuses a path with no safe canonical form with a problem naming the reason", async () => {
    const { status, head, body } = await send("GET", "/api%2Fx", { "x-user": newUser() });
    expect(status).toBe(400);
    expect(head).toMatch(/content-type: application\/problem\+json/i);
    expect(JSON.parse(body)).toMatchObject({ status: 400, detail: expect.stringMatching(/no safe canonical form: .*encoded "\/" \(%2F\)/) });
  });

  it("refuses such a path even where no route matches: the origin might decode it onto one", async () => {
    const before = seen.length;
    expect((await send("GET", "/static%2F..%2Fapi/x")).status).toBe(400);
    expect(seen.length).toBe(before);
  });

  it("forwards exactly the canonical path it matched, query kept: dot segments resolved, slashes merged, params and case kept", async () => {
    const user = newUser();
    const cases: [string, string][] = [
      ["//api/./a/../b//?q=%2F&r=1", "/api/b/?q=%2F&r=1"],
      ["/API;v=1/%7Euser/%61", "/API;v=1/~user/a"],
      ["/x/%2e%2e/api/c", "/api/c"],
    ];
    for (const [sent, forwarded] of cases) {
      const before = seen.length;
      expect((await send("GET", sent, { "x-user": user })).status).toBe(200);
      expect(seen.slice(before)).toEqual([forwarded]);
    }
  });

  it("matches a caseSensitive route only as written", async () => {
    const user = newUser();
    for (let i = 0; i < 3; i++) await send("GET", "/Exact/a", { "x-user": user });
    expect((await send("GET", "/Exact;x/a", { "x-user": user })).status).toBe(429);
    expect((await send("GET", "/exact/a", { "x-user": user })).status).toBe(200);
  });

  it("keys `path` by the folded path, so spellings share one budget", async () => {
    const name = `f-${newUser()}`;
    for (const path of [`/files/${name}`, `/FILES/${name.toUpperCase()}`, `/files/${name}.`]) expect((await send("GET", path)).status).toBe(200);
    expect((await send("GET", `/files/${name};v=2`)).status).toBe(429);
  });
});

describe("Node app: Spillway's own paths never reach the origin", () => {
  const auth = { authorization: "Bearer test-token" };

  it("answers a wrong method on an API path with 405 and Allow", async () => {
    const before = seen.length;
    const { status, head, body } = await send("GET", "/v1/check", auth);
    expect(status).toBe(405);
    expect(head).toMatch(/\r\nallow: POST\r\n/i);
    expect(JSON.parse(body)).toMatchObject({ status: 405, title: "Method Not Allowed" });
    const health = await send("POST", "/healthz", auth, "{}");
    expect(health.status).toBe(405);
    expect(health.head).toMatch(/\r\nallow: GET, HEAD\r\n/i);
    expect(seen.length).toBe(before);
  });

  it("keeps other spellings of an own path and the reserved paths from the origin", async () => {
    const before = seen.length;
    const post = { ...auth, "content-type": "application/json" };
    for (const path of ["/V1/check", "/v1//check", "/v1/check/", "/v1/check;x", "/v1/check."]) {
      expect([path, (await send("POST", path, post, "{}")).status]).toEqual([path, 404]);
    }
    // Node's server resolves dot segments and Hono decodes before routing: the API itself answers (400: no key).
    for (const path of ["/x/../v1/check", "/v1/%63heck"]) expect([path, (await send("POST", path, post, "{}")).status]).toEqual([path, 400]);
    expect((await send("GET", "/v1/top", auth)).status).toBe(404);
    expect((await send("GET", "/METRICS", auth)).status).toBe(404);
    expect((await send("DELETE", "/v1/Reset", auth)).status).toBe(405);
    expect(seen.length).toBe(before);
  });

  it("still forwards the origin's own /v1 paths", async () => {
    const before = seen.length;
    expect((await send("GET", "/v1/users")).status).toBe(200);
    expect(seen.slice(before)).toEqual(["/v1/users"]);
  });
});
