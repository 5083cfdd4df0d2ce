import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { algorithmOf } from "../../src/core/algorithms.js";
import { parsePolicy } from "../../src/core/policy.js";
import type { Policy } from "../../src/core/types.js";
import { decodeStoredState } from "../../src/stores/redis/codec.js";
import { keyLayout } from "../../src/stores/redis/keys.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

// stack.lua: a plain check of several stepped policies (no leases, no blocks) decided by each
// algorithm's fused step in one call, the decision computed in TypeScript from the states it
// read (decodeStackDecision). The conformance table and the differential test hold its
// decisions to the core; this holds what it writes, when it is used, and its fallback.

const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const policy = (input: Record<string, unknown>) => parsePolicy(input, "policy");
const STEPPED = [
  policy({ name: "g", algorithm: "gcra", limit: 5, period: "10s" }),
  // An hour's window: two checks a few ms apart never straddle its (epoch-aligned) end.
  policy({ name: "f", algorithm: "fixed-window", limit: 2, period: "1h" }),
  policy({ name: "s", algorithm: "sliding-window", limit: 5, period: "10s" }),
  policy({ name: "l", algorithm: "sliding-log", limit: 5, period: "10s" }),
];

describe("stack.lua: several plain limits in one call", () => {
  let server: RedisServer;
  let admin: Redis;
  let store: RedisStore;
  /** The entry functions called, in order (`stack`, `check`, …), and the SETs, while watched. */
  const calls: string[] = [];
  const sets: string[][] = [];
  let markers = 0;
  let awaited: { marker: string; resolve: () => void } | undefined;

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
    store = new RedisStore({ url: server.url, keyPrefix: "stack:" });
    expect(await store.ready()).toBe(true);
    // The first call loads the function library (and is sent again): not what is watched.
    await store.check("warm-up", STEPPED, reject);
    const monitor = await admin.monitor();
    monitor.on("monitor", (_time: string, args: unknown[]) => {
      const command = String(args[0]).toUpperCase();
      if (command === "FCALL") calls.push(String(args[1]).replace(/^spillway_[0-9a-f]+_/, ""));
      if (command === "SET") sets.push(args.map(String));
      if (command === "ECHO" && String(args[1]) === awaited?.marker) awaited.resolve();
    });
  });

  afterAll(async () => {
    await store?.close();
    admin?.disconnect();
    await server?.stop();
  });

  /** What `run` sent, once MONITOR has reported it (it lags the reply by a moment). */
  async function watched<T>(run: () => Promise<T>): Promise<{ result: T; calls: string[]; sets: string[][] }> {
    // What earlier calls sent is reported first, then forgotten.
    await monitorCaughtUp();
    calls.length = 0;
    sets.length = 0;
    const result = await run();
    await monitorCaughtUp();
    return { result, calls: [...calls], sets: [...sets] };
  }

  /** Sends a marker and waits until MONITOR reports it: everything sent before it is reported too. */
  async function monitorCaughtUp(): Promise<void> {
    const marker = `caught-up-${++markers}`;
    const seen = new Promise<void>((resolve) => (awaited = { marker, resolve }));
    await admin.echo(marker);
    await seen;
  }

  async function expiresWhenFresh(key: string, policies: readonly Policy[]): Promise<void> {
    const layout = keyLayout("stack:", key);
    for (const one of policies) {
      const stored = decodeStoredState((await admin.get(layout.stateKey(one.name)))!);
      expect(await admin.pexpiretime(layout.stateKey(one.name)), one.name).toBe(Math.ceil(algorithmOf(one).freshAtMs(stored.state, one)));
    }
  }

  it("decides a plain check in one stack.lua call, writes each state to expire when fresh, and a window's count going up keeps its expiry", async () => {
    const first = await watched(() => store.check("a", STEPPED, reject));
    expect(first.calls).toEqual(["stack"]);
    expect(first.result).toMatchObject({ allowed: true, remaining: 1, policy: "f" });
    await expiresWhenFresh("a", STEPPED);
    const second = await watched(() => store.check("a", STEPPED, reject));
    expect(second.result).toMatchObject({ allowed: true, remaining: 0 });
    // The fixed window's count went up in its window: same expiry, so KEEPTTL.
    const fixedSet = second.sets.find((set) => set[1]!.endsWith(":f"));
    expect(fixedSet?.slice(3)).toEqual(["KEEPTTL"]);
    await expiresWhenFresh("a", STEPPED);
  });

  it("all-or-nothing: a refusal by one policy writes no state at all, and the decision names it", async () => {
    const layout = keyLayout("stack:", "b");
    await store.check("b", STEPPED, { ...reject, cost: 2 });
    const before = await admin.mget(...STEPPED.map((one) => layout.stateKey(one.name)));
    const refused = await watched(() => store.check("b", STEPPED, reject));
    expect(refused.calls).toEqual(["stack"]);
    expect(refused.result).toMatchObject({ allowed: false, policy: "f" });
    expect(refused.result.retryAfterMs).toBeGreaterThan(0);
    expect(refused.sets).toEqual([]);
    expect(await admin.mget(...STEPPED.map((one) => layout.stateKey(one.name)))).toEqual(before);
  });

  it("under a burst of concurrent checks from many connections admits exactly the tightest limit, all-or-nothing", async () => {
    const tight = [policy({ name: "wide", algorithm: "gcra", limit: 1000, period: "1h" }), policy({ name: "narrow", algorithm: "fixed-window", limit: 10, period: "1h" })];
    const stores = Array.from({ length: 4 }, () => new RedisStore({ url: server.url, keyPrefix: "stack:", timeoutMs: 5000 }));
    try {
      const decisions = await Promise.all(Array.from({ length: 400 }, (_, i) => stores[i % stores.length]!.check("burst", tight, reject)));
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(10);
      // The refused 390 consumed nothing from the wide limit either.
      const peeked = await store.peek("burst", tight);
      expect(peeked.policies.map((result) => result.remaining)).toEqual([990, 0]);
    } finally {
      await Promise.all(stores.map((one) => one.close()));
    }
  });

  it("a shorter stack after a longer one answers only its own states (the library reuses its working lists between calls)", async () => {
    const refusedFour = await watched(async () => {
      await store.check("e4", STEPPED, { ...reject, cost: 2 });
      return store.check("e4", STEPPED, reject);
    });
    expect(refusedFour.result).toMatchObject({ allowed: false, policy: "f" });
    // Fresh keys, two policies: the four texts of the call before must not follow in the reply
    // (the caller refuses a reply whose state count is not its stack's).
    const two = await watched(() => store.check("e2", STEPPED.slice(0, 2), reject));
    expect(two.calls).toEqual(["stack"]);
    expect(two.result).toMatchObject({ allowed: true, remaining: 1, policy: "f" });
    expect(two.sets).toHaveLength(2);
  });

  it("a state another algorithm wrote (the policy was redefined) goes to check.lua, which decides it as before", async () => {
    const asGcra = [policy({ name: "x", algorithm: "gcra", limit: 3, period: "10s" }), STEPPED[1]!];
    const asWindow = [policy({ name: "x", algorithm: "fixed-window", limit: 3, period: "10s" }), STEPPED[1]!];
    await store.check("c", asGcra, reject);
    const redefined = await watched(() => store.check("c", asWindow, reject));
    expect(redefined.calls).toEqual(["stack", "check"]);
    // The GCRA state counts as none for the window; the shared fixed window holds 2.
    expect(redefined.result).toMatchObject({ allowed: true, remaining: 0, policy: "f" });
    const next = await watched(() => store.check("c", asWindow, reject));
    expect(next.calls).toEqual(["stack"]);
    expect(next.result.allowed).toBe(false);
  });

  it("is not used where its one step cannot decide: a peek, a reservation, a block, a lease, an algorithm without a step", async () => {
    const cases: [string, () => Promise<unknown>][] = [
      ["peek", () => store.peek("d", STEPPED)],
      ["reserve", () => store.check("d", STEPPED, { cost: 1, mode: "reserve", maxWaitMs: 1000 })],
      ["block", () => store.check("d", [STEPPED[0]!, policy({ name: "k", algorithm: "fixed-window", limit: 2, period: "10s", block: "1m" })], reject)],
      ["lease", () => store.check("d", [STEPPED[0]!, policy({ name: "c", algorithm: "concurrency", limit: 2, lease: "1s" })], reject)],
      ["token bucket", () => store.check("d", [STEPPED[0]!, policy({ name: "t", algorithm: "token-bucket", limit: 2, period: "10s" })], reject)],
    ];
    for (const [label, run] of cases) expect((await watched(run)).calls, label).toEqual(["check"]);
  });
});
