// bench:overrides — the gateway's decision (GatewayCore.decide on the memory store, in process)
// for one route, three ways, interleaved rounds: a store without an overrides table (no lookup
// at all), the memory store (its runtime table is looked up, empty), and the same with 1,000
// config overrides (exact and wildcard; the keys sent are not overridden, then are). Prints the
// median ns per decision of each. Run: npx tsx scripts/bench/overrides.ts
import { parseConfig } from "../../src/config.js";
import { type GatewayFacts, GatewayCore } from "../../src/gateway/core.js";
import { canonicalPath, isRefused } from "../../src/http/path.js";
import type { Limiter } from "../../src/limiter.js";
import { MemoryStore } from "../../src/stores/memory.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 100_000);
const KEYS = 1000;

const base = {
  origin: "http://origin.test",
  policies: [{ name: "per-key", algorithm: "gcra", limit: 1_000_000, period: "1s" }],
  routes: [{ match: { path: "/api/*" }, key: "header:x-api-key", policies: ["per-key"] }],
};
const overrides = [
  ...Array.from({ length: 500 }, (_, i) => ({ policy: "per-key", key: `vip-${i}`, limit: 2_000_000 })),
  ...Array.from({ length: 500 }, (_, i) => ({ policy: "per-key", key: `tenant-${i}-*`, limit: 3_000_000 })),
];

/** The memory store's decisions without its overrides table: what a store without one costs. */
function tableless(store: MemoryStore): Limiter {
  return { kind: "memory", check: (k, p, o) => store.check(k, p, o), peek: (k, p) => store.peek(k, p), reset: (k, p) => store.reset(k, p), acquire: (k, p, o) => store.acquire(k, p, o), release: (k, p, l) => store.release(k, p, l), extend: (k, p, l, m) => store.extend(k, p, l, m), debit: (k, p, c) => store.debit(k, p, c), health: () => store.health() };
}

const canonical = canonicalPath("/api/hello");
if (isRefused(canonical)) throw new Error("bad path");
const path = canonical;
function factsFor(key: string): GatewayFacts {
  const headers = new Headers({ "x-api-key": key });
  return { method: "GET", path, search: "", url: () => new URL("http://gw/api/hello"), headers, socketIp: "127.0.0.1", signal: () => new AbortController().signal, defer: () => {} };
}

const variants: Array<[string, GatewayCore, GatewayFacts[]]> = [];
const plainKeys = Array.from({ length: KEYS }, (_, i) => factsFor(`user-${i}`));
const overriddenKeys = Array.from({ length: KEYS }, (_, i) => factsFor(i % 2 ? `vip-${i % 500}` : `tenant-${i % 500}-x`));
const core = (raw: object, limiter: Limiter) => new GatewayCore({ config: parseConfig(raw), limiter, log: () => {} });
variants.push(["no overrides table", core(base, tableless(new MemoryStore())), plainKeys]);
variants.push(["memory store, table empty", core(base, new MemoryStore()), plainKeys]);
variants.push(["1,000 config overrides, key not overridden", core({ ...base, overrides }, new MemoryStore()), plainKeys]);
variants.push(["1,000 config overrides, key overridden", core({ ...base, overrides }, new MemoryStore()), overriddenKeys]);

async function round(gateway: GatewayCore, facts: GatewayFacts[]): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < REQUESTS; i++) {
    const step = await gateway.decide(facts[i % facts.length]!);
    if (!step.forward) throw new Error("denied");
  }
  return Number(process.hrtime.bigint() - started) / REQUESTS;
}

const samples = new Map<string, number[]>(variants.map(([name]) => [name, []]));
for (const [, gateway, facts] of variants) await round(gateway, facts); // warm-up
for (let r = 0; r < ROUNDS; r++) for (const [name, gateway, facts] of variants) samples.get(name)!.push(await round(gateway, facts));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const reference = median(samples.get("no overrides table")!);
for (const [name, values] of samples) console.log(`${name.padEnd(45)} ${median(values).toFixed(0).padStart(6)} ns/decision  ${((median(values) / reference - 1) * 100).toFixed(1).padStart(5)} %`);

// The lookup alone, which is all an override adds to a decision: ns per resolve.
const { overridesFor } = await import("../../src/overrides/overrides.js");
const withOverrides = parseConfig({ ...base, overrides });
const lookups: Array<[string, ReturnType<typeof overridesFor>, string[]]> = [
  ["lookup, table empty", overridesFor(parseConfig(base), new MemoryStore()), plainKeys.map((_, i) => `user-${i}`)],
  ["lookup, 1,000 overrides, not overridden", overridesFor(withOverrides, new MemoryStore()), plainKeys.map((_, i) => `user-${i}`)],
  ["lookup, 1,000 overrides, overridden", overridesFor(withOverrides, new MemoryStore()), overriddenKeys.map((facts) => facts.headers.get("x-api-key")!)],
];
const policies = withOverrides.policies;
for (const [name, resolver, keys] of lookups) {
  await resolver.resolve(policies, keys[0]!); // the first read of the table
  const started = process.hrtime.bigint();
  let found = 0;
  for (let i = 0; i < 2_000_000; i++) found += (resolver.resolve(policies, keys[i % keys.length]!) as readonly { limit: number }[])[0]!.limit > 1_000_000 ? 1 : 0;
  console.log(`${name.padEnd(45)} ${(Number(process.hrtime.bigint() - started) / 2_000_000).toFixed(0).padStart(6)} ns/lookup (${found} overridden)`);
}
