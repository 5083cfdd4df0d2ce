/**
 * bench:size — the Worker a user deploys: `spillway init`'s scaffold, bundled by
 * `wrangler deploy --dry-run --minify`, next to the bare bundles of what it is made of
 * (hono alone, zod/mini alone), so the table says where the bytes go. Writes the
 * "Worker bundle size" section of BENCHMARKS.md.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { writeBenchmarkSection } from "./load.js";
import { ROOT, bundleWorker, packInto, scaffoldWorker, sh } from "./worker-scaffold.js";

/** The ceiling for the scaffolded Worker, gzipped. */
const GOAL_GZIP_KIB = 60;

async function esbuildSize(work: string, name: string, source: string): Promise<{ bytes: number; gzipBytes: number }> {
  const entry = join(work, `${name}.mjs`);
  const out = join(work, `${name}.out.js`);
  writeFileSync(entry, source);
  await sh(join(ROOT, "node_modules", ".bin", "esbuild"), [entry, "--bundle", "--minify", "--format=esm", "--platform=neutral", "--main-fields=module,main", `--outfile=${out}`, "--log-level=error"], ROOT);
  const { readFileSync } = await import("node:fs");
  const code = readFileSync(out);
  return { bytes: code.length, gzipBytes: gzipSync(code, { level: 9 }).length };
}

const kib = (bytes: number) => (bytes / 1024).toFixed(1);

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "spillway-size-"));
  try {
    const tarball = await packInto(work);
    const project = await scaffoldWorker(work, tarball);
    const worker = await bundleWorker(project);
    const wranglerLine = /Total Upload: .*/.exec(worker.output)?.[0] ?? "(wrangler printed no total)";
    const hono = await esbuildSize(ROOT, ".scratch-size-hono", `import { Hono } from "hono"; export default new Hono().get("/", (c) => c.text("ok"));`);
    const zod = await esbuildSize(ROOT, ".scratch-size-zod", `import * as z from "zod/mini"; export const s = z.strictObject({ a: z.optional(z.string()) }); console.log(z.safeParse(s, {}));`);
    const rows = [
      `| \`spillway init\` Worker (\`wrangler deploy --dry-run --minify\`) | ${kib(worker.bytes)} | **${kib(worker.gzipBytes)}** |`,
      `| of which at least: hono (a one-route app) | ${kib(hono.bytes)} | ${kib(hono.gzipBytes)} |`,
      `| of which at least: zod/mini (one schema) | ${kib(zod.bytes)} | ${kib(zod.gzipBytes)} |`,
    ];
    const verdict = worker.gzipBytes <= GOAL_GZIP_KIB * 1024 ? "met" : "NOT met";
    const markdown = [
      "`npm run bench:size`: the Worker a user deploys, built as they build it: the package packed, `npx spillway init`, `npm install`, then `wrangler deploy --dry-run --minify`. gzip is level 9 over the bundle wrangler wrote; wrangler's own line is below it.",
      "",
      "| bundle | minified KiB | gzip KiB |",
      "| --- | ---: | ---: |",
      ...rows,
      "",
      `wrangler: \`${wranglerLine}\`. Goal: at most ${GOAL_GZIP_KIB} KiB gzip — ${verdict}. Before the package work the repository's Worker was 122 KiB gzip, most of it zod's full build and its locales.`,
    ].join("\n");
    console.log(markdown);
    await writeBenchmarkSection("Worker bundle size", markdown);
  } finally {
    rmSync(work, { recursive: true, force: true });
    for (const name of [".scratch-size-hono", ".scratch-size-zod"]) for (const ext of [".mjs", ".out.js"]) rmSync(join(ROOT, `${name}${ext}`), { force: true });
  }
}

await main();
