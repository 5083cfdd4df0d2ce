import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { parseIp } from "../../../src/gateway/ip.js";
import { type KeySource, type RequestFacts, keyOf, missingPart, parseKeySource } from "../../../src/gateway/keys.js";
import { matchesRequest, normalHost, parseHeaderMatch, parseHostMatch } from "../../../src/gateway/match.js";
import { createNodeGateway } from "../../../src/node/http/gateway.js";
import { joinKeyParts } from "../../../src/overrides/key-parts.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { type GatewayUnderTest, type Running, startGateway, startOrigin } from "../node/http/gateway-helpers.js";

const source = (text: string | string[]) => parseKeySource(text) as KeySource;
const facts = (more: Partial<RequestFacts> = {}): RequestFacts => ({
  clientIp: parseIp("203.0.113.9"),
  headers: new Headers({ "x-api-key": "acme", cookie: 'theme=dark; sid="s-1"; other=x' }),
  url: new URL("http://gw/a"),
  path: "/a",
  method: "POST",
  host: "api.example.com",
  ...more,
});

describe("composite keys and new key sources", () => {
  it("reads host, method, cookie:NAME and cf:* (request.cf)", async () => {
    expect(await keyOf(source("host"), facts())).toEqual({ value: "api.example.com", source: "host", storeKey: "host:api.example.com" });
    expect(await keyOf(source("method"), facts())).toEqual({ value: "POST", source: "method", storeKey: "method:POST" });
    expect(await keyOf(source("cookie:sid"), facts())).toMatchObject({ value: "s-1" });
    expect(await keyOf(source("cookie:missing"), facts())).toBeUndefined();
    expect(await keyOf(source("cf:asn"), facts({ cf: { asn: 64_500 } }))).toEqual({ value: "64500", source: "cf:asn", storeKey: "cf:asn:64500" });
    expect(await keyOf(source("cf:colo"), facts())).toBeUndefined();
  });

  it("joins every part, and is missing when any part is; the 400 names the missing part", async () => {
    const composite = source(["header:x-api-key", "ip/56"]);
    expect(await keyOf(composite, facts())).toEqual({ value: "acme|203.0.113.9", source: "[header:x-api-key|ip]", storeKey: "[header:x-api-key|ip]:acme|203.0.113.9" });
    expect(await keyOf(composite, facts({ clientIp: parseIp("2001:db8:1:2ff::1") }))).toMatchObject({ value: "acme|2001:db8:1:200::/56" });
    const noHeader = facts({ headers: new Headers() });
    expect(await keyOf(composite, noHeader)).toBeUndefined();
    expect(missingPart(composite, noHeader)).toEqual({ kind: "header", name: "x-api-key" });
  });

  it("no two different part lists join to one key", () => {
    const lists = [["a|b", "c"], ["a", "b|c"], ["a\\", "b"], ["a", "\\b"], ["a\\|b"], ["a", "|b"], ["a|", "b"], ["a\\\\", "|"], ["a"], ["a", ""]];
    const joined = lists.map(joinKeyParts);
    expect(new Set(joined).size).toBe(lists.length);
    expect(joinKeyParts(["a|b", "c"])).toBe("a\\|b|c");
  });

  it("refuses bad sources and composites naming the part", () => {
    expect(parseKeySource(["ip", "cf:city"])).toMatch(/^part 1: .*"cf:city"/);
    expect(parseKeySource(["ip", "const:x"])).toMatch(/^part 1: a constant adds nothing/);
    expect(parseKeySource(["ip", "ip"])).toMatch(/names one key source twice/);
    expect(parseKeySource("cookie:")).toMatch(/cookie name/);
    expect(parseKeySource(["ip"])).toEqual({ kind: "ip", ipv6PrefixBits: 64 });
  });
});

describe("match.host and match.headers", () => {
  it("parses exact and *.suffix hosts, refuses ports and paths", () => {
    expect(parseHostMatch("API.Example.com")).toEqual({ exact: "api.example.com" });
    expect(parseHostMatch("*.example.com")).toEqual({ suffix: ".example.com" });
    expect(parseHostMatch("api.example.com:443")).toMatch(/no port/);
    expect(parseHostMatch("a/b")).toMatch(/host name/);
    expect(parseHeaderMatch({ host: "x" })).toEqual({ field: "host", error: expect.stringMatching(/match\.host/) });
  });

  it("normalises the request's host: case, port, IPv6 brackets, trailing dot", () => {
    expect(normalHost("API.example.COM:8443")).toBe("api.example.com");
    expect(normalHost("[::1]:80")).toBe("[::1]");
    expect(normalHost("example.com.")).toBe("example.com");
    expect(normalHost(undefined)).toBeUndefined();
  });

  it("matches a value, a list of values, or presence; every field must match", () => {
    const match = { host: { suffix: ".example.com" }, headers: parseHeaderMatch({ "X-Plan": ["pro", "team"], "x-beta": true }) as never };
    const headers = (init: Record<string, string>) => new Headers(init);
    expect(matchesRequest(match, () => "a.example.com", headers({ "x-plan": "team", "x-beta": "" }))).toBe(true);
    expect(matchesRequest(match, () => "example.com", headers({ "x-plan": "team", "x-beta": "" }))).toBe(false);
    expect(matchesRequest(match, () => "a.example.com", headers({ "x-plan": "free", "x-beta": "1" }))).toBe(false);
    expect(matchesRequest(match, () => "a.example.com", headers({ "x-plan": "pro" }))).toBe(false);
  });

  it("gateway config errors name the field", () => {
    const base = { origin: "http://o.test", policies: [{ name: "p", limit: 1, period: "1s" }] };
    const route = (more: Record<string, unknown>) => ({ ...base, routes: [{ match: { path: "/a" }, key: "ip", policies: ["p"], ...more }] });
    expect(() => createNodeGateway({ config: parseConfig(route({ match: { path: "/a", host: "a.test:80" } })), limiter: new MemoryStore() })).toThrow(/^routes\.0\.match\.host: /);
    expect(() => createNodeGateway({ config: parseConfig(route({ match: { path: "/a", headers: { "x plan": "pro" } } })), limiter: new MemoryStore() })).toThrow(/^routes\.0\.match\.headers\.x plan: /);
    expect(() => createNodeGateway({ config: parseConfig(route({ key: ["ip", "cf:country"] })), limiter: new MemoryStore() })).toThrow(/^routes\.0\.key\.1: "cf:country" reads request\.cf, which only Cloudflare Workers have/);
    expect(() => createNodeGateway({ config: parseConfig(route({ fallbackKey: "cf:asn" })), limiter: new MemoryStore() })).toThrow(/^routes\.0\.fallbackKey: /);
  });
});

describe("Node gateway: runtime overrides and a global dryRun", () => {
  let origin: Running;
  let gateway: GatewayUnderTest;
  let dry: GatewayUnderTest;
  const raw = {
    policies: [{ name: "per-user", algorithm: "fixed-window", limit: 1, period: "1h" }],
    routes: [{ match: { path: "/api/*" }, key: ["header:x-user", "method"], policies: ["per-user"] }],
  };
  beforeAll(async () => {
    origin = await startOrigin((_req, res) => res.end("ok"));
    gateway = await startGateway({ ...raw, origin: origin.url });
    dry = await startGateway({ ...raw, origin: origin.url, dryRun: true });
  });
  afterAll(async () => {
    await Promise.all([gateway?.close(), dry?.close()]);
    await origin?.close();
  });
  const send = async (server: GatewayUnderTest, user: string) => {
    const response = await fetch(`${server.url}/api/a`, { headers: { "x-user": user } });
    await response.text();
    return { status: response.status, policy: response.headers.get("ratelimit-policy"), dry: response.headers.get("spillway-dry-run") };
  };

  it("an override PUT on /v1 applies to the gateway's composite key at once in this process", async () => {
    const user = `u-${crypto.randomUUID()}`;
    const put = await fetch(`${gateway.url}/v1/overrides`, {
      method: "PUT",
      headers: { authorization: "Bearer test-token", "content-type": "application/json" },
      body: JSON.stringify({ policy: "per-user", key: `${user}|GET`, source: ["header:x-user", "method"], limit: 3 }),
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({ policy: "per-user", key: `${user}|GET`, source: ["header:x-user", "method"], limit: 3 });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await send(gateway, user)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await send(gateway, `${user}-other`)).policy).toBe('"per-user";q=1;w=3600');
  });

  it("under a burst right after the PUT, a key admits exactly its override's limit, and a header spelling it borrows nothing", async () => {
    const user = `u-${crypto.randomUUID()}`;
    const put = await fetch(`${gateway.url}/v1/overrides`, {
      method: "PUT",
      headers: { authorization: "Bearer test-token", "content-type": "application/json" },
      body: JSON.stringify({ policy: "per-user", key: `${user}|GET`, source: ["header:x-user", "method"], limit: 5 }),
    });
    expect(put.status).toBe(200);
    const burst = await Promise.all(Array.from({ length: 40 }, () => send(gateway, user)));
    expect(burst.filter((answer) => answer.status === 200)).toHaveLength(5);
    expect(burst.filter((answer) => answer.status === 429)).toHaveLength(35);
    // An override for a source no route of the policy reads could never apply: refused, naming
    // source; the same value through the route keeps the policy's own limit of 1.
    const other = await fetch(`${gateway.url}/v1/overrides`, {
      method: "PUT",
      headers: { authorization: "Bearer test-token", "content-type": "application/json" },
      body: JSON.stringify({ policy: "per-user", key: `${user}-b|GET`, source: "header:x-user", limit: 5 }),
    });
    expect(other.status).toBe(400);
    expect(((await other.json()) as { field: string }).field).toBe("source");
    const borrowed = await Promise.all(Array.from({ length: 10 }, () => send(gateway, `${user}-b`)));
    expect(borrowed.filter((answer) => answer.status === 200)).toHaveLength(1);
  });

  it("a top-level dryRun never blocks and says what would have happened", async () => {
    const user = `u-${crypto.randomUUID()}`;
    expect(await send(dry, user)).toMatchObject({ status: 200, dry: "allowed" });
    expect(await send(dry, user)).toMatchObject({ status: 200, dry: "denied" });
  });
});
