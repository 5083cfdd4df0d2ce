// Part 3 of bench:redis: over-admission under contention. 200 clients, each on its own Redis
// connection, fire several requests at once at one fresh key with a limit of 100 per 60 s;
// we count what was admitted against what the limiter may admit in that time.
import type { Redis } from "ioredis";
import { type Contender, type Decide, type LimitSpec, connect } from "./redis-contenders.js";

export interface AdmissionOptions {
  url: string;
  runId: string;
  contenders: readonly Contender[];
  clients: number;
  requestsPerClient: number;
  rounds: number;
  spec: LimitSpec;
}

export interface AdmissionResult {
  contender: Contender;
  attempts: number;
  /** Per round. */
  admitted: number[];
  allowed: number[];
  errors: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Window algorithms start a new window on multiples of the period (Redis TIME for Spillway,
 * Date.now for the upstash-style script): a burst across that boundary may rightly admit
 * more. Waits until the next burst is well inside one window.
 */
async function awayFromWindowEdge(periodMs: number, burstMs: number): Promise<void> {
  const intoWindowMs = Date.now() % periodMs;
  if (intoWindowMs > periodMs - burstMs) await sleep(periodMs - intoWindowMs + 50);
}

async function burst(deciders: Decide[], key: string, requestsPerClient: number): Promise<{ admitted: number; errors: number; elapsedMs: number }> {
  let admitted = 0;
  let errors = 0;
  const startedMs = performance.now();
  await Promise.all(
    deciders.flatMap((decide) =>
      Array.from({ length: requestsPerClient }, () =>
        decide(key).then(
          (allowed) => {
            if (allowed) admitted++;
          },
          () => {
            errors++;
          },
        ),
      ),
    ),
  );
  return { admitted, errors, elapsedMs: performance.now() - startedMs };
}

export async function runAdmission(options: AdmissionOptions, progress: (line: string) => void): Promise<AdmissionResult[]> {
  const clients: Redis[] = await Promise.all(Array.from({ length: options.clients }, () => connect(options.url)));
  try {
    const results: AdmissionResult[] = [];
    for (const contender of options.contenders) {
      const prefix = `bench:${options.runId}:admission:${contender.id}:`;
      const deciders = await Promise.all(clients.map((client) => contender.create(client, options.spec, prefix)));
      const result: AdmissionResult = { contender, attempts: options.clients * options.requestsPerClient, admitted: [], allowed: [], errors: 0 };
      for (let round = 0; round < options.rounds; round++) {
        await awayFromWindowEdge(options.spec.periodMs, 5000);
        const outcome = await burst(deciders, `hot-${round}`, options.requestsPerClient);
        // The whole burst's wall time bounds the time the limiter saw between its first and last decision.
        result.admitted.push(outcome.admitted);
        result.allowed.push(contender.allowance?.(options.spec, outcome.elapsedMs) ?? options.spec.limit);
        result.errors += outcome.errors;
      }
      progress(`${contender.label.padEnd(48)} admitted ${result.admitted.join(", ")} of ${result.attempts} (may admit ${result.allowed.join(", ")})${result.errors ? `, errors ${result.errors}` : ""}`);
      results.push(result);
    }
    return results;
  } finally {
    for (const client of clients) client.disconnect();
  }
}

export const overAdmitted = (result: AdmissionResult) => Math.max(0, ...result.admitted.map((admitted, round) => admitted - result.allowed[round]!));

export function admissionTable(options: AdmissionOptions, results: readonly AdmissionResult[]): string[] {
  const lines = [
    "| limiter | attempts per round | admitted (per round) | may admit | over-admitted (worst round) | errors |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const result of results) {
    const allowed = [...new Set(result.allowed)].join(", ");
    lines.push(`| ${result.contender.label} | ${result.attempts} | ${result.admitted.join(", ")} | ${allowed} | **${overAdmitted(result)}** | ${result.errors} |`);
  }
  return lines;
}
