import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

// The memory store's bytes per key (issue 30, row 11; BENCHMARKS.md, "Memory store: bytes
// per key"): scripts/bench/memory-per-key.ts fills a store in a fresh Node process with
// --expose-gc and reads the heap after full collections, the key strings left out. The bounds
// are loose (today's figures are about 550 bytes for a rate policy and 1,170 for a lease, on
// Node 24; the store held about 1,060 and 1,830 before), so that only a regression to what
// an idle key used to carry (a Map per key for its policies, a lease queue and its callbacks
// made for every key) fails them, not a V8 update.

const root = fileURLToPath(new URL("../../../", import.meta.url));
const run = promisify(execFile);

async function heapBytesPerKey(algorithm: string): Promise<number> {
  const { stdout } = await run(process.execPath, ["--expose-gc", "--import", "./bin/ts-hooks.mjs", "scripts/bench/memory-per-key.ts", "20000", "230", algorithm], { cwd: root });
  const result = JSON.parse(stdout.trim().split("\n").at(-1)!) as { keys: number; heapBytesPerKey: number };
  expect(result.keys).toBe(20000);
  return result.heapBytesPerKey;
}

describe("memory store: bytes per key beside the key", () => {
  it("a key with one rate policy's state holds well under 1 KB", async () => {
    const bytes = await heapBytesPerKey("fixed-window");
    expect(bytes).toBeGreaterThan(100); // the figure measures something: a state, its key's entry
    expect(bytes).toBeLessThan(850);
  }, 60_000);

  it("a key holding one lease stays under 1.5 KB (the lease id and its entry are state)", async () => {
    expect(await heapBytesPerKey("concurrency")).toBeLessThan(1500);
  }, 60_000);
});
