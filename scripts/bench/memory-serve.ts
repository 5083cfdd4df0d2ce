// What one key costs Spillway's HTTP server on the memory store, end to end: startServer (as
// `spillway/node` exports it, what `spillway serve` runs) in this process gets one
// POST /v1/check for each of N distinct 230-byte keys, and the heap it grew by is reported per
// key (the key included: here it arrives in a request body, and the store keeps its copy).
// Needs --expose-gc. Used by scripts/bench/memory.ts (`npm run bench:memory`).
//
//   node --expose-gc --import ./bin/ts-hooks.mjs scripts/bench/memory-serve.ts KEYS
// prints one JSON line: { keys, keyLength, heapBytesPerKey, rssBytesPerKey }
import http from "node:http";
import { MemoryStore, parseConfig, startServer } from "../../src/node-middleware.js";

const KEY_LENGTH = 230;
const CONNECTIONS = 16;
const TOKEN = "bench-token";
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

function settled(): NodeJS.MemoryUsage {
  for (let i = 0; i < 3; i++) gc!();
  return process.memoryUsage();
}

const keys = Number(process.argv[2] ?? 100_000);
// State that stays live for the whole run: a key's state is what is measured.
const config = parseConfig({ policies: [{ name: "hourly", algorithm: "fixed-window", limit: 5, period: "1h" }] });
const limiter = new MemoryStore({ maxKeys: keys * 2 });
const server = await startServer({ config, limiter, port: 0, token: TOKEN });
const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
const keyOf = (i: number) => `u${i}:`.padEnd(KEY_LENGTH, "x");
const check = (key: string) =>
  new Promise<void>((resolve, reject) => {
    const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    const outgoing = http.request({ agent, host: "127.0.0.1", port: server.port, path: "/v1/check", method: "POST", headers }, (incoming) => {
      if (incoming.statusCode !== 200) reject(new Error(`/v1/check answered ${incoming.statusCode}`));
      incoming.resume();
      incoming.on("end", resolve);
    });
    outgoing.on("error", reject);
    outgoing.end(JSON.stringify({ key, policy: "hourly" }));
  });
const run = async (from: number, count: number) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < count) await check(keyOf(from + next++));
    }),
  );
};
await run(keys, 2000); // warm: the connections, the code
const before = settled();
await run(0, keys);
const after = settled();
if (limiter.size !== keys + 2000) throw new Error(`the store holds ${limiter.size} keys, not ${keys + 2000}`);
console.log(JSON.stringify({ keys, keyLength: KEY_LENGTH, heapBytesPerKey: Math.round((after.heapUsed - before.heapUsed) / keys), rssBytesPerKey: Math.round((after.rss - before.rss) / keys) }));
agent.destroy();
await server.close();
