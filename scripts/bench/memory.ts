// bench:memory — what one key costs the memory store (BENCHMARKS.md, "Memory store: bytes per
// key"). Each figure is a fresh Node process (--expose-gc): memory-per-key.ts fills a
// MemoryStore with N keys of one algorithm directly and reports the heap per key beside the
// key string; memory-serve.ts does the same through the HTTP server (POST /v1/check), key included.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { writeBenchmarkSection } from "./load.js";

const KEYS = Number(process.env.BENCH_KEYS ?? 100_000);
const KEY_LENGTH = 230;
const ALGORITHMS = ["gcra", "token-bucket", "fixed-window", "sliding-window", "sliding-log", "concurrency"];
const root = fileURLToPath(new URL("../../", import.meta.url));

function measure(script: string, args: string[]): Record<string, number> {
  const out = execFileSync(process.execPath, ["--expose-gc", "--import", "./bin/ts-hooks.mjs", `scripts/bench/${script}`, ...args], { cwd: root, encoding: "utf8" });
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

const rows: string[] = [];
for (const algorithm of ALGORITHMS) {
  const result = measure("memory-per-key.ts", [String(KEYS), String(KEY_LENGTH), algorithm]);
  console.log(algorithm, result);
  rows.push(`| ${algorithm} | ${result.heapBytesPerKey} | ${result.keyBytes} | ${result.rssBytesPerKey} |`);
}
const serve = measure("memory-serve.ts", [String(KEYS)]);
console.log("serve", serve);

await writeBenchmarkSection(
  "Memory store: bytes per key (bench:memory)",
  `
\`npm run bench:memory\` (Node ${process.version}): ${KEYS.toLocaleString("en")} distinct keys of ${KEY_LENGTH} bytes, one decision each, one
policy (limit 5 per hour, so every state is live; concurrency: 4 slots, 1 h leases, one lease each). Heap growth after full
collections (\`--expose-gc\`), per key. "Beside the key" leaves out the key strings (made before the first reading); V8
holds a ${KEY_LENGTH}-byte key in about ${8 * Math.ceil((12 + KEY_LENGTH) / 8)} bytes. RSS growth follows the heap's pages and is shown for scale only.

| algorithm | heap bytes per key, beside the key | the key string | RSS bytes per key |
|---|---|---|---|
${rows.join("\n")}

Through the HTTP server (\`startServer\` from \`spillway/node\`, what \`spillway serve\` runs; one \`POST /v1/check\` per key, the key included):
${serve.heapBytesPerKey} heap bytes per key, ${serve.rssBytesPerKey} RSS bytes per key.
`,
);
