// What one key costs the memory store, measured: fills a MemoryStore with N distinct keys
// (one decision each) and reports the heap it grew by, per key, beside the key strings
// themselves (they are made and held before the first measurement, so a key's own bytes are
// not counted: what is left is the store's). Needs --expose-gc: a full collection before
// each reading, so that the figure is what stays, not what has not been collected yet.
//
// Used by scripts/bench/memory.ts (`npm run bench:memory`, BENCHMARKS.md) with large numbers
// and by test/unit/stores/memory-store-bytes.test.ts with a small one (as a child process).
//
//   node --expose-gc --import ./bin/ts-hooks.mjs scripts/bench/memory-per-key.ts KEYS KEY_LENGTH ALGORITHM
// prints one JSON line: { keys, keyLength, algorithm, heapBytesPerKey, rssBytesPerKey, keyBytes }
import { parsePolicy } from "../../src/core/index.js";
import { MemoryStore } from "../../src/node-middleware.js";

export interface PerKey {
  keys: number;
  keyLength: number;
  algorithm: string;
  /** Heap growth per key, the key string excluded. */
  heapBytesPerKey: number;
  /** Resident set growth per key, the key string excluded (the heap's pages and whatever else the process touched). */
  rssBytesPerKey: number;
  /** What V8 holds for one key string of this length (a sequential one-byte string), for scale. */
  keyBytes: number;
}

const POLICIES: Record<string, object> = {
  gcra: { name: "per-minute", algorithm: "gcra", limit: 600, period: "1m" },
  "token-bucket": { name: "per-minute", algorithm: "token-bucket", limit: 600, period: "1m" },
  "fixed-window": { name: "per-minute", algorithm: "fixed-window", limit: 600, period: "1m" },
  "sliding-window": { name: "per-minute", algorithm: "sliding-window", limit: 600, period: "1m" },
  "sliding-log": { name: "per-minute", algorithm: "sliding-log", limit: 600, period: "1m" },
  concurrency: { name: "slots", algorithm: "concurrency", limit: 4, lease: "1h" },
};

const gc = (globalThis as { gc?: () => void }).gc;

function settledHeap(): { heap: number; rss: number } {
  if (!gc) throw new Error("run with --expose-gc: the figures need a full collection before each reading");
  for (let i = 0; i < 3; i++) gc();
  const usage = process.memoryUsage();
  return { heap: usage.heapUsed, rss: usage.rss };
}

export async function measurePerKey(keys: number, keyLength: number, algorithm: string): Promise<PerKey> {
  const raw = POLICIES[algorithm];
  if (!raw) throw new Error(`no policy for algorithm ${algorithm}; one of ${Object.keys(POLICIES).join(", ")}`);
  const policy = parsePolicy(raw, "policy");
  // Flat, distinct, one-byte strings of exactly keyLength, as a header value read from a request would be.
  const names: string[] = [];
  for (let i = 0; i < keys; i++) {
    const id = `k${i}:`;
    names.push((id + "x".repeat(Math.max(0, keyLength - id.length))).slice(0, Math.max(keyLength, id.length)));
  }
  for (const name of names) (name as unknown as { length: number }).length; // touch
  const store = new MemoryStore({ maxKeys: keys + 1 });
  const options = { cost: 1, mode: "reject", maxWaitMs: 0 } as const;
  const before = settledHeap();
  if (algorithm === "concurrency") for (const name of names) await store.acquire(name, [policy], { maxWaitMs: 0 });
  else for (const name of names) await store.check(name, [policy], options);
  const after = settledHeap();
  if (store.size !== keys) throw new Error(`the store holds ${store.size} keys, not ${keys}`);
  await store.close();
  return {
    keys,
    keyLength,
    algorithm,
    heapBytesPerKey: Math.round((after.heap - before.heap) / keys),
    rssBytesPerKey: Math.round((after.rss - before.rss) / keys),
    keyBytes: 8 * Math.ceil((12 + keyLength) / 8),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [keys = "100000", keyLength = "230", algorithm = "gcra"] = process.argv.slice(2);
  console.log(JSON.stringify(await measurePerKey(Number(keys), Number(keyLength), algorithm)));
}
