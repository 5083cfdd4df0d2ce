// What one key costs `spillway serve` on the memory store, end to end: an in-process server
// (the gateway in front of a loopback origin, observation on as by default) gets one request
// for each of N distinct 230-byte keys in a header, and the heap it grew by is reported per
// key (the key included: here it arrives in a request, and the store keeps its copy). Needs
// --expose-gc. Used by scripts/bench/memory.ts (`npm run bench:memory`).
//
//   node --expose-gc --import ./bin/ts-hooks.mjs scripts/bench/memory-serve.ts KEYS
// prints one JSON line: { keys, keyLength, heapBytesPerKey, rssBytesPerKey }
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseConfig } from "../../src/config.js";
import { createNodeObservability } from "../../src/node/observability.js";
import { originAgents } from "../../src/node/origin-agents.js";
import { runtimePartsOf } from "../../src/node/serve-reload.js";
import { startServer } from "../../src/node/server.js";
import { MemoryStore } from "../../src/stores/memory.js";

const KEY_LENGTH = 230;
const CONNECTIONS = 16;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

function settled(): NodeJS.MemoryUsage {
  for (let i = 0; i < 3; i++) gc!();
  return process.memoryUsage();
}

const keys = Number(process.argv[2] ?? 100_000);
const origin = http.createServer((_req, res) => res.end("ok"));
await new Promise<void>((resolve) => origin.listen(0, "127.0.0.1", resolve));
const config = parseConfig({
  origin: `http://127.0.0.1:${(origin.address() as AddressInfo).port}`,
  // State that stays live for the whole run: a key's state is what is measured.
  policies: [{ name: "hourly", algorithm: "fixed-window", limit: 5, period: "1h" }],
  routes: [{ match: { path: "/*" }, key: "header:x-user", policies: ["hourly"] }],
});
const limiter = new MemoryStore({ maxKeys: keys * 2 });
const observing = createNodeObservability({ config, limiter });
const server = await startServer({ ...runtimePartsOf(config, { limiter, observer: observing.observer, agents: originAgents() }), limiter: observing.apiLimiter, port: 0, token: "bench", observability: observing.routes });
const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
const keyOf = (i: number) => `u${i}:`.padEnd(KEY_LENGTH, "x");
const send = (key: string) =>
  new Promise<void>((resolve, reject) => {
    const outgoing = http.request({ agent, host: "127.0.0.1", port: server.port, path: "/hello", headers: { "x-user": key } }, (incoming) => {
      incoming.resume();
      incoming.on("end", resolve);
    });
    outgoing.on("error", reject);
    outgoing.end();
  });
const run = async (from: number, count: number) => {
  let next = 0;
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (next < count) await send(keyOf(from + next++));
  }));
};
await run(keys, 2000); // warm: pools, code, the sketch's first rows
const before = settled();
await run(0, keys);
const after = settled();
console.log(JSON.stringify({ keys, keyLength: KEY_LENGTH, heapBytesPerKey: Math.round((after.heapUsed - before.heapUsed) / keys), rssBytesPerKey: Math.round((after.rss - before.rss) / keys) }));
agent.destroy();
await server.close();
origin.close();
