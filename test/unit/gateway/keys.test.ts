import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { createGateway } from "../../../src/gateway/gateway.js";
import { formatIp, parseIp, parseIpRange, rangeContains, resolveClientIp } from "../../../src/gateway/ip.js";
import { type KeySource, REPEATED, type RequestKey, keyOf, parseKeySource } from "../../../src/gateway/keys.js";
import { type CanonicalPath, canonicalPath } from "../../../src/http/path.js";
import { findRoute, parsePathPattern } from "../../../src/gateway/routes.js";
import { MemoryStore } from "../../../src/stores/memory.js";

const ip = (text: string) => formatIp(parseIp(text)!);
const ranges = (...texts: string[]) => texts.map((text) => parseIpRange(text) as Exclude<ReturnType<typeof parseIpRange>, string>);

describe("IP addresses", () => {
  it("gives every spelling of one address one canonical text", () => {
    expect(ip("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::1");
    expect(ip("2001:db8::0:1")).toBe("2001:db8::1");
    expect(ip("[2001:db8::1]")).toBe("2001:db8::1");
    expect(ip("fe80::1%eth0")).toBe("fe80::1");
    expect(ip("2001:db8:0:0:1:0:0:1")).toBe("2001:db8::1:0:0:1");
    expect(ip("::")).toBe("::");
    expect(ip("::1")).toBe("::1");
    // A dual-stack Node socket reports IPv4 clients as IPv4-mapped IPv6.
    expect(ip("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(ip("::ffff:c000:207")).toBe("192.0.2.7");
  });

  it("refuses what is not an address", () => {
    for (const text of ["", "1.2.3", "1.2.3.256", "01.2.3.4", "1::2::3", "2001:db8::g", "1:2:3:4:5:6:7:8:9", "localhost", "1.2.3.4/8"]) {
      expect(parseIp(text), text).toBeUndefined();
    }
  });

  it("matches CIDR ranges of either family", () => {
    const [v4, v6] = ranges("10.0.0.0/8", "2001:db8::/32");
    expect(rangeContains(v4!, parseIp("10.200.3.4")!)).toBe(true);
    expect(rangeContains(v4!, parseIp("11.0.0.1")!)).toBe(false);
    expect(rangeContains(v6!, parseIp("2001:db8:ffff::1")!)).toBe(true);
    expect(rangeContains(v6!, parseIp("2001:db9::1")!)).toBe(false);
    expect(rangeContains(v4!, parseIp("::ffff:10.1.1.1")!)).toBe(true);
  });
});

describe("client address behind proxies", () => {
  const trusted = ranges("127.0.0.1", "10.0.0.0/8");

  it("ignores X-Forwarded-For unless the peer is a trusted proxy", () => {
    expect(formatIp(resolveClientIp("203.0.113.9", "1.1.1.1", [])!)).toBe("203.0.113.9");
    expect(formatIp(resolveClientIp("203.0.113.9", "1.1.1.1", trusted)!)).toBe("203.0.113.9");
  });

  it("walks X-Forwarded-For from the right, skipping trusted hops only", () => {
    // The client wrote "6.6.6.6" itself; our proxies appended the real address and each other.
    expect(formatIp(resolveClientIp("127.0.0.1", "6.6.6.6, 198.51.100.4, 10.1.2.3", trusted)!)).toBe("198.51.100.4");
    expect(formatIp(resolveClientIp("127.0.0.1", "10.9.9.9", trusted)!)).toBe("10.9.9.9");
    expect(formatIp(resolveClientIp("127.0.0.1", null, trusted)!)).toBe("127.0.0.1");
    expect(resolveClientIp("127.0.0.1", "garbage", trusted)).toBeUndefined();
    // A hop with a port is its address (proxies such as Azure's write one).
    expect(formatIp(resolveClientIp("127.0.0.1", "203.0.113.7:5555", trusted)!)).toBe("203.0.113.7");
    expect(formatIp(resolveClientIp("127.0.0.1", "[2001:db8::1]:5555, 10.1.2.3:80", trusted)!)).toBe("2001:db8::1");
    for (const bad of ["203.0.113.7:", "203.0.113.7:99999", "2001:db8::1:5555:", "[2001:db8::1]:x"]) expect(resolveClientIp("127.0.0.1", bad, trusted), bad).toBeUndefined();
    expect(resolveClientIp(undefined, "1.1.1.1", trusted)).toBeUndefined();
  });
});

describe("key sources", () => {
  const facts = (overrides: Partial<Parameters<typeof keyOf>[1]> = {}) => ({
    clientIp: parseIp("2001:db8:1:2:aaaa:bbbb:cccc:dddd"),
    headers: new Headers({ "x-api-key": "abc" }),
    url: new URL("http://gw/search?q=1&user=u7"),
    path: "/search",
    ...overrides,
  });
  const source = (text: string | string[]) => parseKeySource(text) as KeySource;
  /** keyOf for a request that carries each source at most once. */
  const keyAt = async (from: KeySource, at: Parameters<typeof keyOf>[1]): Promise<RequestKey | undefined> => {
    const key = await keyOf(from, at);
    if (key === REPEATED) throw new Error("a source read twice");
    return key;
  };

  it("aggregates IPv6 to the configured prefix (default /64), IPv4 exact", async () => {
    expect(await keyAt(source("ip"), facts())).toEqual({ value: "2001:db8:1:2::/64", source: "ip", storeKey: "ip:2001:db8:1:2::/64" });
    expect((await keyAt(source("ip/48"), facts()))?.value).toBe("2001:db8:1::/48");
    expect((await keyAt(source("ip/128"), facts()))?.value).toBe("2001:db8:1:2:aaaa:bbbb:cccc:dddd");
    expect((await keyAt(source("ip/64"), facts({ clientIp: parseIp("192.0.2.1") })))?.value).toBe("192.0.2.1");
  });

  it("reads headers, query parameters, the path and constants", async () => {
    expect(await keyAt(source("header:X-API-Key"), facts())).toEqual({ value: "abc", source: "header:x-api-key", storeKey: "header:x-api-key:abc" });
    expect(await keyAt(source("query:user"), facts())).toEqual({ value: "u7", source: "query:user", storeKey: "query:user:u7" });
    expect(await keyAt(source("path"), facts())).toEqual({ value: "/search", source: "path", storeKey: "path:/search" });
    expect(await keyAt(source("const:everyone"), facts())).toEqual({ value: "everyone", source: "const", storeKey: "const:everyone" });
  });

  it("reports a missing source instead of an empty key", async () => {
    expect(await keyAt(source("header:x-other"), facts())).toBeUndefined();
    expect(await keyAt(source("header:x-api-key"), facts({ headers: new Headers({ "x-api-key": " " }) }))).toBeUndefined();
    expect(await keyAt(source("query:missing"), facts())).toBeUndefined();
    expect(await keyAt(source("query:q"), facts({ url: new URL("http://gw/?q=") }))).toBeUndefined();
    expect(await keyAt(source("ip"), facts({ clientIp: undefined }))).toBeUndefined();
  });

  it("reads a source carried twice as REPEATED, never as one of its values: query, cookie, a part of a composite key", async () => {
    const twice = { url: new URL("http://gw/q?k=x123&k=banned") };
    expect(await keyOf(source("query:k"), facts(twice))).toBe(REPEATED);
    expect(await keyOf(source("query:k"), facts({ url: new URL("http://gw/q?k=&k=x") }))).toBe(REPEATED);
    expect(await keyOf(source(["header:x-api-key", "query:k"]), facts(twice))).toBe(REPEATED);
    expect(await keyOf(source("cookie:sid"), facts({ headers: new Headers({ cookie: "sid=a; theme=dark; sid=b" }) }))).toBe(REPEATED);
    // Two Cookie lines as a Worker's runtime joins them (", "), and as node:http does ("; ").
    expect(await keyOf(source("cookie:sid"), facts({ headers: new Headers([["cookie", "sid=a"], ["cookie", "sid=b"]]) }))).toBe(REPEATED);
    expect(await keyAt(source("cookie:sid"), facts({ headers: new Headers({ cookie: "sid=a; other=b" }) }))).toMatchObject({ value: "a" });
    // The other parameters may repeat: only the key's own source counts.
    expect(await keyAt(source("query:k"), facts({ url: new URL("http://gw/q?k=x&tag=1&tag=2") }))).toMatchObject({ value: "x" });
  });

  it("reads a header sent on two lines as REPEATED where the edge can tell (Node's rawHeaders)", async () => {
    const lines = new Headers([["x-api-key", "x123"], ["x-api-key", "banned"]]);
    const node = { get: (name: string) => lines.get(name), repeated: (name: string) => name === "x-api-key" };
    expect(await keyOf(source("header:x-api-key"), facts({ headers: node }))).toBe(REPEATED);
    // A Worker's Headers cannot tell: the joined field is one value, the one line the origin receives.
    expect(await keyAt(source("header:x-api-key"), facts({ headers: lines }))).toMatchObject({ value: "x123, banned" });
  });

  it("hashes keys too long for a store", async () => {
    const token = "x".repeat(2000);
    const key = await keyAt(source("header:authorization"), facts({ headers: new Headers({ authorization: token }) }));
    expect(key?.value).toBe(token);
    expect(key?.storeKey).toMatch(/^header:authorization#sha256:[0-9a-f]{64}$/);
  });
});

describe("route patterns", () => {
  const route = (path: string, methods?: string[]) => ({ pattern: parsePathPattern(path) as Exclude<ReturnType<typeof parsePathPattern>, string>, methods: methods && new Set(methods), path });
  const routes = [route("/search/*", ["GET", "HEAD"]), route("/users/:id/posts"), route("/"), route("/*")];
  const match = (method: string, path: string) => findRoute(routes, method, canonicalPath(path) as CanonicalPath)?.path;

  it("matches method and path, first route first", () => {
    expect(match("GET", "/search")).toBe("/search/*");
    expect(match("HEAD", "/search/a/b")).toBe("/search/*");
    expect(match("POST", "/search/a")).toBe("/*");
    expect(match("PUT", "/users/42/posts")).toBe("/users/:id/posts");
    expect(match("PUT", "/users/42/posts/1")).toBe("/*");
    expect(match("GET", "/")).toBe("/");
  });

  it("normalizes the spellings an origin would treat as the same path", () => {
    expect(match("GET", "/%73earch/x")).toBe("/search/*");
    expect(match("GET", "//search//x/")).toBe("/search/*");
    expect(match("GET", "/search/")).toBe("/search/*");
  });
});

describe("IPv6 aggregation end to end", () => {
  it("counts 10,000 addresses of one /64 as one key", async () => {
    const config = parseConfig({
      origin: "http://origin.test",
      policies: [{ name: "big", algorithm: "fixed-window", limit: 10_000, period: "1h" }],
      routes: [{ match: { path: "/*" }, key: "ip/64", policies: ["big"] }],
    });
    const limiter = new MemoryStore();
    const gateway = createGateway({ config, limiter, clientIpOf: (c) => c.req.header("test-peer"), fetchOrigin: async () => new Response("ok") });
    const send = (peer: string) => gateway.fetch(new Request("http://gw/x", { headers: { "test-peer": peer } }));
    for (let i = 0; i < 10_000; i++) {
      const suffix = [i >> 12, (i >> 8) & 0xf, i & 0xff, (i * 7919) & 0xffff].map((part) => part.toString(16)).join(":");
      const response = await send(`2001:db8:aa:bb:${suffix}`);
      if (response.status !== 200) throw new Error(`request ${i} answered ${response.status}`);
    }
    expect(limiter.size).toBe(1);
    const denied = await send("2001:db8:aa:bb:ffff:ffff:ffff:ffff");
    expect(denied.status).toBe(429);
    expect((await send("2001:db8:aa:bc::1")).status).toBe(200);
    await limiter.close();
    // 10,000 requests through the gateway: many seconds on a loaded machine (the default is 5 s).
  }, 60_000);
});
