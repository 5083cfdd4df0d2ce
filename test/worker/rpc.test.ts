import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uniqueKey } from "./helpers.js";

// The service-binding surface, reached through the Worker's own loopback binding.
const rpc = exports.SpillwayRpc;

describe("SpillwayRpc (service-binding RPC)", () => {
  it("check/peek/reset have the HTTP API's shapes", async () => {
    const key = uniqueKey("rpc");
    const policy = { name: "two", algorithm: "fixed-window", limit: 2, period: "1h" };
    expect(await rpc.check({ key, policy })).toMatchObject({ allowed: true, remaining: 1, policy: "two" });
    expect(await rpc.check({ key, policy, cost: 1 })).toMatchObject({ allowed: true, remaining: 0 });
    expect(await rpc.check({ key, policy })).toMatchObject({ allowed: false, retryAfterMs: expect.any(Number) });
    expect(await rpc.peek({ key, policy })).toMatchObject({ allowed: false, remaining: 0 });
    await rpc.reset({ key, policy });
    expect(await rpc.peek({ key, policy })).toMatchObject({ allowed: true, remaining: 2 });
  });

  it("named policies come from the bundled config", async () => {
    expect(await rpc.check({ key: uniqueKey("rpc-named"), policy: "per-minute" })).toMatchObject({ allowed: true, limit: 600 });
  });

  it("acquire/extend/release a lease", async () => {
    const key = uniqueKey("rpc-lease");
    const policy = { name: "slots", algorithm: "concurrency", limit: 1 };
    const lease = await rpc.acquire({ key, policy });
    expect(lease).toMatchObject({ acquired: true, leaseMs: 30_000, limit: 1, remaining: 0 });
    expect(await rpc.acquire({ key, policy })).toMatchObject({ acquired: false });
    if (!lease.acquired) throw new Error("unreachable");
    expect(await rpc.extend({ key, policy, leaseId: lease.leaseId, leaseMs: 5000 })).toEqual({ extended: true, leaseMs: 5000 });
    expect(await rpc.release({ key, policy, leaseId: lease.leaseId })).toEqual({ released: true });
    expect(await rpc.acquire({ key, policy })).toMatchObject({ acquired: true });
  });

  it("bad arguments throw an error that names the field", async () => {
    // Settle the RPC promise with then(): touching any other property of it would pipeline a new call.
    const messageOf = (call: Promise<unknown>) => call.then(() => "resolved", (error: Error) => error.message);
    expect(await messageOf(rpc.check({ key: "", policy: "per-minute" }))).toMatch(/^key: /);
    expect(await messageOf(rpc.check({ key: "k", policy: "per-minute", cost: -2 }))).toMatch(/^cost: must be an integer/);
    expect(await messageOf(rpc.check({ key: "k", policy: "nope" }))).toMatch(/^policy: no policy named "nope"/);
    expect(await messageOf(rpc.check(null))).toMatch(/^body: must be a JSON object/);
  });
});
