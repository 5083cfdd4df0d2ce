// bench:cost — what a decision costs on Cloudflare. Runs cost-scenarios.bench-run.ts inside
// workerd (vitest with @cloudflare/vitest-plugin, offline), reads what each scenario's storage
// probe counted, prices it at the published prices, prints the table and writes it to
// BENCHMARKS.md ("What a decision costs (bench:cost)").
import { startVitest } from "vitest/node";
import type { TestCase } from "vitest/node";
import type { ScenarioCost } from "./cost-scenarios.bench-run.js";
import { writeBenchmarkSection } from "./load.js";

/**
 * Published prices, USD, Workers Paid plan, beyond the included usage. Read 2026-11-28:
 * - Workers: https://developers.cloudflare.com/workers/platform/pricing/ ($0.30 per million
 *   requests; a service binding's call is no request of its own)
 * - Durable Objects: https://developers.cloudflare.com/durable-objects/platform/pricing/ ($0.15
 *   per million requests, alarm invocations included; $12.50 per million GB-s at 128 MB; SQLite
 *   rows written $1.00 per million, each setAlarm() one row, deletes count as rows; rows read
 *   $0.001 per million; stored data $0.20 per GB-month)
 * - Upstash Redis: https://upstash.com/docs/redis/overall/billing (pay as you go: $0.20 per 100K commands)
 * - Workers Rate Limiting binding: https://developers.cloudflare.com/workers/runtime-apis/bindings/rate-limit/
 *   (no charge of its own on the pricing pages; 10 s or 60 s periods, counted per location)
 */
export const PRICES = {
  workerRequest: 0.3e-6,
  objectRequest: 0.15e-6,
  rowWritten: 1e-6,
  rowRead: 0.001e-6,
  /** One ms of an object's wall time: 128 MB for 1 ms, at $12.50 per million GB-s. */
  objectMs: 0.128 * 0.001 * 12.5e-6,
  upstashCommand: 0.2 / 100_000,
};

interface Priced extends ScenarioCost {
  perMillion: { worker: number; objectRequests: number; rows: number; duration: number; total: number };
}

function price(cost: ScenarioCost): Priced {
  const per = (count: number) => (count / cost.decisions) * 1e6;
  const worker = per(cost.workerInvocations) * PRICES.workerRequest;
  const objectRequests = per(cost.objectRequests) * PRICES.objectRequest;
  // setAlarm() is billed as a row written; deleteAll() is not priced (the pricing page names no charge for it).
  const rows = per(cost.rowsWritten + cost.alarmsSet) * PRICES.rowWritten + per(cost.rowsRead) * PRICES.rowRead;
  const duration = per(cost.objectCallMs) * PRICES.objectMs;
  return { ...cost, perMillion: { worker, objectRequests, rows, duration, total: worker + objectRequests + rows + duration } };
}

const fixed = (value: number, digits = 2) => value.toFixed(digits);
const perDecision = (count: number, decisions: number) => fixed(count / decisions);

function table(rows: Priced[]): string {
  const lines = [
    "| scenario | Worker invocations | object requests | of which overrides | rows written | alarms set | rows read | object ms | keys left idle | $ per million decisions |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const row of rows) {
    const d = row.decisions;
    lines.push(
      `| ${row.label} | ${perDecision(row.workerInvocations, d)} | ${perDecision(row.objectRequests, d)} | ${perDecision(row.overridesRequests, d)} | ${perDecision(row.rowsWritten, d)} | ${perDecision(row.alarmsSet, d)} | ${perDecision(row.rowsRead, d)} | ${perDecision(row.objectCallMs, d)} | ${row.keysLeft} of ${row.keys} | ${fixed(row.perMillion.total)} |`,
    );
  }
  return lines.join("\n");
}

function breakdown(rows: Priced[]): string {
  const lines = ["| scenario | Worker requests | object requests | rows (written + alarms, read) | duration | total |", "| --- | ---: | ---: | ---: | ---: | ---: |"];
  for (const row of rows) {
    const p = row.perMillion;
    lines.push(`| ${row.label} | ${fixed(p.worker)} | ${fixed(p.objectRequests)} | ${fixed(p.rows)} | ${fixed(p.duration, 4)} | ${fixed(p.total)} |`);
  }
  return lines.join("\n");
}

/** The issue's goals, read off this run's rows (and what the earlier layout cost, as issue 31 counted it). */
function goals(rows: Priced[]): string[] {
  const find = (start: string) => rows.find((row) => row.label.startsWith(start));
  const per = (row: Priced | undefined, count: (row: Priced) => number) => (row ? fixed(count(row) / row.decisions) : "?");
  const one = find("an API key, one policy");
  const stack = find("an API key, a stack of 3");
  const once = find("keys seen once");
  const counted = rows.filter((row) => row.label.startsWith("a counted route") || row.label.startsWith("a costed route") || row.label.startsWith("a reserve/settle route"));
  const worst = counted.reduce((most, row) => Math.max(most, row.objectRequests / row.decisions), 0);
  return [
    "Goals, this run:",
    `- a stack of 3 costs what one policy costs: ${per(stack, (row) => row.rowsWritten)} rows written per decision for the stack, ${per(one, (row) => row.rowsWritten)} for one policy (the earlier layout wrote one row per policy: 3 for the stack);`,
    `- a key seen once: ${once ? fixed((once.rowsWritten + once.alarmsSet) / once.keys) : "?"} billed rows in its life, its row and its alarm (the earlier layout: a row and its primary-key index, the alarm, then a DELETE before deleteAll);`,
    `- object requests per gateway request on counted routes (goal ≤ 1.1 each; the most, ${fixed(worst)}: ${worst <= 1.1 ? "met" : "NOT met"}): ${counted.map((row) => `${row.label}: ${per(row, (r) => r.objectRequests)}`).join("; ")}. Every counted answer's debit (a cost from the body or known at the head, a reservation's settle) rides with the key's next request, or goes alone 500 ms later; before, a cost known at the head was debited before the head went out, a second request per counted answer (2.02). A route of three measures is decided in one call, every policy at its own cost (CheckOptions.costs), and settled in one carried debit; before, a call per measure group: 2.03 without an estimate, 3.03 with one (3.01 rows written).`,
  ];
}

async function main(): Promise<void> {
  const costs: ScenarioCost[] = [];
  const vitest = await startVitest("test", [], {
    config: "scripts/bench/cost.vitest.config.ts",
    watch: false,
    reporters: [
      "dot",
      {
        onTestCaseResult(testCase: TestCase) {
          const cost = testCase.meta().cost;
          if (cost) costs.push(cost);
        },
      },
    ],
  });
  await vitest.close();
  if (costs.length === 0 || process.exitCode) throw new Error("the scenarios did not run: see vitest's output above");
  const rows = costs.map(price);
  const seenOnce = rows.find((row) => row.label.startsWith("keys seen once"));
  const markdown = [
    "`npm run bench:cost`: each scenario sends its decisions through the real Worker (`createWorker`: the gateway, or `/v1/check` over a service binding) inside workerd (`@cloudflare/vitest-plugin`, `scripts/bench/cost.vitest.config.ts`), waits until its keys are idle and their alarms have run, and sums what the storage probe counted in every key's `LimiterObject` (`scripts/bench/storage-probe.ts`: the SQL cursors' `rowsRead`/`rowsWritten`, one row per key-value put or delete, `setAlarm()` and `deleteAll()` calls, the RPC calls and alarms the object answered). Counts are per decision.",
    "",
    table(rows),
    "",
    "Dollars per million decisions at the published prices, Workers Paid plan, beyond the included usage (read 2026-11-28): Workers $0.30 per million requests ([Workers pricing](https://developers.cloudflare.com/workers/platform/pricing/); a service binding's call is no request of its own); Durable Objects $0.15 per million requests (alarms included), rows written $1.00 per million (each `setAlarm()` one row; deletes count as rows), rows read $0.001 per million, $12.50 per million GB-s of duration at 128 MB ([Durable Objects pricing](https://developers.cloudflare.com/durable-objects/platform/pricing/)). Worker CPU time ($0.02 per million CPU ms) is not counted here; `object ms` is each object call's round trip as the Worker saw it, an upper bound of the object's active time.",
    "",
    breakdown(rows),
    "",
    `Beside it: Cloudflare's Rate Limiting binding costs nothing of its own (approximate: counted per location, periods of 10 s or 60 s only; [docs](https://developers.cloudflare.com/workers/runtime-apis/bindings/rate-limit/)), so $0.30 per million decisions for the Worker's request. Upstash Redis, pay as you go, is $0.20 per 100K commands ([billing](https://upstash.com/docs/redis/overall/billing)): $${fixed(PRICES.upstashCommand * 1e6)} per million decisions at one command each (one script call per \`limit()\`), plus $0.30 for the Worker's request.`,
    "",
    ...goals(rows),
    "",
    seenOnce ? `A key seen once costs its row and its alarm (${fixed((seenOnce.rowsWritten + seenOnce.alarmsSet) / seenOnce.keys)} billed rows per key, and ${fixed(seenOnce.objectRequests / seenOnce.keys)} object requests: its decision and its alarm), then one \`deleteAll()\` (${seenOnce.deleteAlls} for ${seenOnce.keys} keys), which the pricing page names no charge for.` : "",
  ].join("\n");
  console.log(`\n${table(rows)}\n\n${breakdown(rows)}`);
  await writeBenchmarkSection("What a decision costs (bench:cost)", markdown);
  console.log("\nwritten to BENCHMARKS.md");
}

await main();
