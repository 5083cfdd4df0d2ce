import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../../src/core/policy.js";
import { storeCheckOptions } from "../../../../src/core/check-options.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { describeConnectionError, redactRedisUrl, validateRedisUrl } from "../../../../src/stores/redis/connection-errors.js";
import { RedisStore } from "../../../../src/stores/redis/store.js";

/** An error shaped as Node's net and dns modules throw them. */
function systemError(message: string, fields: Record<string, unknown>): Error {
  return Object.assign(new Error(message), fields);
}

describe("Redis URLs", () => {
  it.each([
    ["redis://127.0.0.1:6379"],
    ["rediss://user:secret@redis.example.com:6380/2"],
    ["redis://localhost"],
  ])("accepts %s", (url) => {
    expect(validateRedisUrl(url, "url")).toBe(url);
  });

  it.each([
    ["http://127.0.0.1:6379", /url must start with redis:\/\/ or rediss:\/\/ \(TLS\), got "http:\/\/127\.0\.0\.1:6379"/],
    ["127.0.0.1:6379", /url (must start with|is not a URL)/],
    ["redis://", /url (names no host|is not a URL)/],
    ["redis://:pw@:6379", /url (names no host|is not a URL)/],
    ["redis://host:6379/cache", /url: the path must be a database number/],
    ["", /url must be a redis:\/\/ or rediss:\/\/ URL/],
  ])("refuses %j with a TypeError naming the field", (url, message) => {
    expect(() => validateRedisUrl(url, "url")).toThrow(TypeError);
    expect(() => validateRedisUrl(url, "url")).toThrow(message);
  });

  it("never shows a password", () => {
    expect(redactRedisUrl("redis://app:hunter2@10.0.0.1:6379/0")).toBe("redis://app:***@10.0.0.1:6379/0");
    expect(redactRedisUrl("rediss://:hunter2@10.0.0.1:6380")).toBe("rediss://:***@10.0.0.1:6380");
    expect(() => validateRedisUrl("http://app:hunter2@host", "url")).toThrow(/app:\*\*\*@host/);
    expect(() => validateRedisUrl("http://app:hunter2@host", "url")).not.toThrow(/hunter2/);
  });

  it("new RedisStore({ url }) refuses a malformed URL before connecting, naming it", () => {
    expect(() => new RedisStore({ url: "http://127.0.0.1:6379" })).toThrow(/^RedisStore: url must start with redis:\/\//);
    expect(() => new RedisStore({ clusterNodes: ["redis://a:7000", "h2:7001"] })).toThrow(/RedisStore: clusterNodes\.1/);
  });
});

describe("connection errors say where, what and what to do", () => {
  it.each([
    [systemError("connect ECONNREFUSED 127.0.0.1:6380", { code: "ECONNREFUSED", syscall: "connect", address: "127.0.0.1", port: 6380 }), "redis://:pw@127.0.0.1:6380", "cannot connect to Redis at redis://:***@127.0.0.1:6380: connect ECONNREFUSED 127.0.0.1:6380 (is redis-server running there, on that port?)"],
    [systemError("getaddrinfo ENOTFOUND redis.internal", { code: "ENOTFOUND", hostname: "redis.internal" }), "redis://redis.internal:6379", "cannot connect to Redis at redis://redis.internal:6379: ENOTFOUND redis.internal (no such host: check the host name in the URL)"],
    [systemError("connect ETIMEDOUT", { code: "ETIMEDOUT" }), "rediss://127.0.0.1:6379", /no TLS handshake: if this server does not speak TLS, use redis:\/\/ instead of rediss:\/\//],
    [systemError("write EPROTO …:error:0A00010B:SSL routines:ssl3_get_record:wrong version number", { code: "EPROTO" }), "rediss://127.0.0.1:6379", /use redis:\/\/ instead of rediss:\/\//],
    [new Error("WRONGPASS invalid username-password pair or user is disabled."), "redis://app:pw@127.0.0.1:6379", /check the user and password in the URL/],
  ])("%s", (error, url, expected) => {
    const message = describeConnectionError(error, url);
    if (typeof expected === "string") expect(message).toBe(expected);
    else expect(message).toMatch(expected);
    expect(message).not.toContain(":pw@");
  });
});

describe("check(key, policies) without options", () => {
  const policy = parsePolicy({ name: "two", limit: 2, period: "1m" }, "policy");

  it("takes the defaults: one request, refused when over", async () => {
    const store = new MemoryStore();
    const decisions = [await store.check("k", [policy]), await store.check("k", [policy]), await store.check("k", [policy])];
    expect(decisions.map((decision) => decision.allowed)).toEqual([true, true, false]);
    expect(storeCheckOptions(undefined)).toEqual({ cost: 1, mode: "reject", maxWaitMs: 0 });
    expect(storeCheckOptions({ cost: 2 } as never)).toEqual({ cost: 2, mode: "reject", maxWaitMs: 0 });
  });

  it("refuses options that are not numbers, naming them", async () => {
    await expect(new MemoryStore().check("k", [policy], { cost: "1" } as never)).rejects.toThrow(/^options\.cost: must be a number, got "1"/);
    await expect(new MemoryStore().check("k", [policy], 5 as never)).rejects.toThrow(/^options: must be an object/);
  });
});
