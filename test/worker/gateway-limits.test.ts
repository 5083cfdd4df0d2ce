import { describe, expect, it } from "vitest";
import { gatewayApp, uniqueIp, uniqueUser, waitFor } from "./gateway-helpers.js";

// The gateway deciding in the Worker's real Durable Objects, in front of an origin stand-in.
const slot = { name: "slot", algorithm: "concurrency", limit: 1, lease: "30s" };
const gw = gatewayApp({
  origin: "https://origin.test",
  policies: [
    { name: "three", algorithm: "gcra", limit: 3, period: "1h" },
    { name: "spaced", algorithm: "gcra", limit: 5, period: "1s", burst: 1 },
    { name: "big", algorithm: "fixed-window", limit: 10_000, period: "1h" },
    slot,
  ],
  routes: [
    { match: { path: "/three/*" }, key: "header:x-user", policies: ["three"] },
    { match: { path: "/delay/*" }, key: "header:x-user", policies: ["spaced"], onLimit: "delay", maxDelayMs: 500 },
    { match: { path: "/dry/*" }, key: "header:x-user", policies: ["three"], dryRun: true },
    { match: { path: "/slot/*" }, key: "header:x-user", policies: ["slot"] },
    { match: { path: "/v6/*" }, key: "ip/64", policies: ["big"] },
    { match: { path: "/proxied/*" }, key: "ip", policies: ["three"] },
  ],
  deny: { ips: ["203.0.113.0/24"], keys: ["banned"] },
  allow: { ips: ["198.51.100.7"] },
  trustProxy: ["10.255.0.0/16"],
  originFeedback: true,
});
const as = (user: string) => ({ headers: { "x-user": user }, ip: uniqueIp() });

describe("Worker gateway: limits", () => {
  it("delay holds a request until its reserved slot, at most maxDelayMs", async () => {
    const user = uniqueUser();
    const started = Date.now();
    const timed = async () => {
      const response = await gw.send("/delay/a", as(user));
      await response.text();
      return { status: response.status, ms: Date.now() - started };
    };
    // One per 200 ms, burst 1: slots at 0, 200, 400 ms; a fourth (600 ms) is past maxDelayMs.
    const results = await Promise.all([timed(), timed(), timed(), timed()]);
    const admitted = results.filter((r) => r.status === 200).map((r) => r.ms).sort((a, b) => a - b);
    expect(results.filter((r) => r.status === 429)).toHaveLength(1);
    expect(admitted[1]).toBeGreaterThanOrEqual(180);
    expect(admitted[2]).toBeGreaterThanOrEqual(380);
    expect(admitted[2]).toBeLessThan(2000);
  });

  it("dry run never blocks but reports in headers and logs", async () => {
    const user = uniqueUser();
    const responses = [];
    for (let i = 0; i < 5; i++) responses.push(await gw.send("/dry/a", as(user)));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(responses.map((r) => r.headers.get("spillway-dry-run"))).toEqual(["allowed", "allowed", "allowed", "denied", "denied"]);
    expect(gw.logs.filter((entry) => entry.event === "dry-run-deny" && String(entry.key).includes(user))).toHaveLength(2);
  });

  it("deny lists answer 403 for addresses and keys; allow lists skip limiting", async () => {
    expect((await gw.send("/three/a", { headers: { "x-user": uniqueUser() }, ip: "203.0.113.5" })).status).toBe(403);
    expect((await gw.send("/three/a", as("banned"))).status).toBe(403);
    const vip = { headers: { "x-user": uniqueUser() }, ip: "198.51.100.7" };
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await gw.send("/three/a", vip)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
  });

  it("reads X-Forwarded-For only from a trusted proxy", async () => {
    const client = uniqueIp();
    const viaProxy = (forwardedFor: string) => gw.send("/proxied/a", { ip: "10.255.0.1", headers: { "x-forwarded-for": forwardedFor } });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await viaProxy(`${uniqueIp()}, ${client}`)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it("an origin 429 with Retry-After pauses that key for every caller until then", async () => {
    const user = uniqueUser();
    gw.origin.handler = (request) => (request.headers.get("x-user") === user ? new Response("busy", { status: 429, headers: { "retry-after": "1" } }) : new Response("ok"));
    expect((await gw.send("/three/a", as(user))).status).toBe(429);
    // The pause is written in the background: wait until a request is refused without reaching the origin.
    await waitFor(async () => {
      const before = gw.origin.hits;
      return (await gw.send("/three/b", as(user))).status === 429 && gw.origin.hits === before;
    });
    const hits = gw.origin.hits;
    const paused = await gw.send("/three/b", as(user));
    expect(await paused.json()).toMatchObject({ "violated-policies": ["origin-retry-after"] });
    expect(gw.origin.hits).toBe(hits);
    expect((await gw.send("/three/a", as(uniqueUser()))).status).toBe(200);
    gw.origin.handler = () => new Response("ok");
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await gw.send("/three/a", as(user))).status).toBe(200);
  });

  it("counts 1,000 addresses of one /64 as one key (10,000 in the Node suite)", async () => {
    const prefix = `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}:1`;
    const statuses = new Map<number, number>();
    for (let i = 0; i < 1000; i++) {
      const response = await gw.send("/v6/a", { ip: `${prefix}:${i.toString(16)}:${(i * 31).toString(16)}::${(i * 7).toString(16)}` });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    }
    expect(statuses.get(200)).toBe(1000);
    const response = await gw.send("/v6/a", { ip: `${prefix}::1` });
    expect(response.headers.get("ratelimit")).toMatch(/^"big";r=8999;/);
  });
});

describe("Worker gateway: concurrency leases", () => {
  const streamingOrigin = () => {
    const control: { push?: (text: string) => void; end?: () => void; fail?: () => void } = {};
    gw.origin.handler = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            control.push = (text) => controller.enqueue(new TextEncoder().encode(text));
            control.end = () => controller.close();
            control.fail = () => controller.error(new Error("origin connection reset"));
            controller.enqueue(new TextEncoder().encode("start"));
          },
        }),
      );
    return control;
  };

  it("holds the lease while the answer streams and releases it when the answer ends", async () => {
    const user = uniqueUser();
    const control = streamingOrigin();
    const first = await gw.send("/slot/a", as(user));
    expect(first.status).toBe(200);
    expect((await gw.send("/slot/a", as(user))).status).toBe(429);
    const text = first.text();
    control.end!();
    expect(await text).toBe("start");
    await waitFor(async () => (await gw.send("/slot/a", as(user))).status === 200);
  });

  it("releases the lease when the client aborts mid-answer", async () => {
    const user = uniqueUser();
    streamingOrigin();
    const first = await gw.send("/slot/a", as(user));
    const reader = first.body!.getReader();
    await reader.read();
    expect((await gw.send("/slot/a", as(user))).status).toBe(429);
    await reader.cancel("client went away");
    await waitFor(async () => (await gw.send("/slot/a", as(user))).status === 200);
  });

  it("releases the lease when the origin fails mid-answer", async () => {
    const user = uniqueUser();
    const control = streamingOrigin();
    const first = await gw.send("/slot/a", as(user));
    const reading = first.text();
    control.fail!();
    await expect(reading).rejects.toThrow(/origin connection reset/);
    await waitFor(async () => (await gw.send("/slot/a", as(user))).status === 200);
  });

  it("releases the lease when the origin cannot be reached", async () => {
    const user = uniqueUser();
    gw.origin.handler = () => {
      throw new TypeError("Network connection lost.");
    };
    expect((await gw.send("/slot/a", as(user))).status).toBe(502);
    expect((await gw.send("/slot/a", as(user))).status).toBe(502);
  });
});
