/**
 * npm run bench:hotkeys: the hot-key simulation (scripts/bench/hotkeys-sim.ts) with and
 * without LocalCache, side by side; writes the "Hot keys" section of BENCHMARKS.md.
 * 8 isolates, one authoritative store 50 ms away, a hot key receiving 10,000 requests/s
 * (about ten times what one Durable Object serves). `--no-write` prints only.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type SimOptions, type SimResult, simulateHotKey } from "./hotkeys-sim.js";

const common = { isolates: 8, rttMs: 50, arrivalsPerSec: 10_000 } as const;
const scenarios: { title: string; options: Omit<SimOptions, "cached"> }[] = [
  {
    title: "under its limit (fixed-window 20,000 / 1 s, share 0.1)",
    options: { ...common, durationMs: 10_000, policy: { name: "hot", algorithm: "fixed-window", limit: 20_000, period: 1000, local: { share: 0.1 } } },
  },
  {
    title: "10× over its limit (fixed-window 10,000 / 10 s, share 0.1)",
    options: { ...common, durationMs: 40_000, policy: { name: "hot", algorithm: "fixed-window", limit: 10_000, period: 10_000, local: { share: 0.1 } } },
  },
];

const row = (label: string, r: SimResult) =>
  `| ${label} | ${r.decisions.toLocaleString("en-US")} | ${r.storeCalls.toLocaleString("en-US")} | ${r.callsPerDecision.toFixed(4)} | ${r.p50LatencyMs.toFixed(1)} | ${r.admitted.toLocaleString("en-US")} | ${r.exactAdmitted.toLocaleString("en-US")} | ${r.overAdmitted} | ${(100 * r.worstUnderAdmission).toFixed(2)} % |`;

const tables: string[] = [];
for (const scenario of scenarios) {
  const cached = await simulateHotKey({ ...scenario.options, cached: true });
  const direct = await simulateHotKey({ ...scenario.options, cached: false });
  const table = [
    `### ${scenario.title}`,
    "",
    "| | decisions | store calls | store calls / decision (steady) | p50 decision ms | admitted | exact limiter admitted | over-admitted | worst under-admission per window |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    row("with LocalCache", cached),
    row("without (every decision to the store)", direct),
  ].join("\n");
  console.log(`${table}\n`);
  tables.push(table);
}

const section = `## Hot keys (bench:hotkeys)

A simulation on a virtual clock (\`scripts/bench/hotkeys-sim.ts\`, also run by the unit tests with small
numbers): ${common.isolates} isolates, each with its own \`LocalCache\`, share one authoritative store (the
MemoryStore, the same code the Durable Object runs) behind a ${common.rttMs} ms round trip; a hot key receives
${common.arrivalsPerSec.toLocaleString("en-US")} requests/s spread evenly over the isolates, about ten times what one Durable Object serves.
The same arrivals also go through an exact single store with no round trip. "Steady" leaves out the
first window. "over-admitted" sums, over every window, the admissions beyond the limit; "under-admission"
is the most any steady window admitted below the exact limiter, as a share of the limit. Admissions decided
by the store count at the store's moment (half a round trip before the answer arrives), so the run's
total can differ from the exact limiter's by the requests of the last half round trip.

${tables.join("\n\n")}
`;

if (!process.argv.includes("--no-write")) {
  const path = fileURLToPath(new URL("../../BENCHMARKS.md", import.meta.url));
  const current = readFileSync(path, "utf8");
  const start = current.search(/^## Hot keys/m);
  if (start < 0) writeFileSync(path, `${current.trimEnd()}\n\n${section}`);
  else {
    const after = current.slice(start + 1).search(/^## /m);
    writeFileSync(path, `${current.slice(0, start)}${section}${after < 0 ? "" : `\n${current.slice(start + 1 + after)}`}`);
  }
  console.log("written to BENCHMARKS.md");
}
