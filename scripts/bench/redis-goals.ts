// The goals of issue 3, set next to what bench:redis measured.
import { type AdmissionResult, overAdmitted } from "./redis-admission.js";
import { type Contender, FLOOR_EVALSHA, RATE_LIMITER_FLEXIBLE, SPILLWAY_GCRA, SPILLWAY_SLIDING_WINDOW } from "./redis-contenders.js";
import { type ThroughputOptions, type ThroughputResults, cellId } from "./redis-throughput.js";

const RLF_GOAL = 1;
const FLOOR_GOAL = 0.8;
const SPILLWAY = [SPILLWAY_GCRA, SPILLWAY_SLIDING_WINDOW];

interface Ratios {
  toRlf: number[];
  toFloor: number[];
}

function ratios(options: ThroughputOptions, results: ThroughputResults): Ratios {
  const out: Ratios = { toRlf: [], toFloor: [] };
  for (const keyCount of options.keyCounts) {
    for (const concurrency of options.concurrencies) {
      const rate = (contender: Contender) => results.get(cellId(keyCount, concurrency, contender))?.perSecond ?? Number.NaN;
      for (const spillway of SPILLWAY) {
        out.toRlf.push(rate(spillway) / rate(RATE_LIMITER_FLEXIBLE));
        out.toFloor.push(rate(spillway) / rate(FLOOR_EVALSHA));
      }
    }
  }
  return out;
}

/** Median Redis time per decision of a contender over every cell. */
export function medianRedisUs(options: ThroughputOptions, results: ThroughputResults, contender: Contender): number {
  const values: number[] = [];
  for (const keyCount of options.keyCounts) {
    for (const concurrency of options.concurrencies) {
      const value = results.get(cellId(keyCount, concurrency, contender))?.redisUsPerCall;
      if (value !== undefined && Number.isFinite(value)) values.push(value);
    }
  }
  values.sort((a, b) => a - b);
  return values[Math.floor(values.length / 2)] ?? Number.NaN;
}

const range = (values: number[]) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
const verdict = (met: boolean) => (met ? "**met**" : "**missed**");

/** Per cell: the Spillway ratios the goals are about. */
export function ratioTable(options: ThroughputOptions, results: ThroughputResults): string[] {
  const lines = [
    `| keys | callers | GCRA ÷ rlf (goal ≥ ${RLF_GOAL.toFixed(2)}) | sliding-window ÷ rlf (goal ≥ ${RLF_GOAL.toFixed(2)}) | GCRA ÷ EVALSHA floor (goal ≥ ${FLOOR_GOAL.toFixed(2)}) | sliding-window ÷ EVALSHA floor (goal ≥ ${FLOOR_GOAL.toFixed(2)}) |`,
    "| ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const keyCount of options.keyCounts) {
    for (const concurrency of options.concurrencies) {
      const rate = (contender: Contender) => results.get(cellId(keyCount, concurrency, contender))?.perSecond ?? Number.NaN;
      const cells = [
        rate(SPILLWAY_GCRA) / rate(RATE_LIMITER_FLEXIBLE),
        rate(SPILLWAY_SLIDING_WINDOW) / rate(RATE_LIMITER_FLEXIBLE),
        rate(SPILLWAY_GCRA) / rate(FLOOR_EVALSHA),
        rate(SPILLWAY_SLIDING_WINDOW) / rate(FLOOR_EVALSHA),
      ].map((ratio) => ratio.toFixed(2));
      lines.push(`| ${keyCount.toLocaleString("en-US")} | ${concurrency} | ${cells.join(" | ")} |`);
    }
  }
  return lines;
}

export interface GoalInputs {
  options: ThroughputOptions;
  results: ThroughputResults;
  admission: readonly AdmissionResult[];
  /** Redis µs per call of defining the GCRA check script's Lua (the EVALSHA fallback), then `return 1`. */
  libraryUs: number;
}

export function goalLines({ options, results, admission, libraryUs }: GoalInputs): string[] {
  const { toRlf, toFloor } = ratios(options, results);
  const spillwayOver = admission.filter((result) => result.contender.id.startsWith("spillway-")).map(overAdmitted);
  const rlfOver = admission.filter((result) => result.contender === RATE_LIMITER_FLEXIBLE).map(overAdmitted);
  const fastAsRlf = toRlf.every((ratio) => ratio >= RLF_GOAL);
  const zeroOver = spillwayOver.length > 0 && spillwayOver.every((over) => over === 0);
  const nearFloor = toFloor.every((ratio) => ratio >= FLOOR_GOAL);
  const us = (contender: Contender) => medianRedisUs(options, results, contender).toFixed(1);
  const lines = [
    `- "At least as fast as rate-limiter-flexible": Spillway ÷ rlf throughput is ${range(toRlf)} over the ${toRlf.length} cells (GCRA and sliding-window, every key count and caller count): ${verdict(fastAsRlf)}.`,
    `- "With zero over-admission": Spillway over-admitted ${spillwayOver.reduce((sum, over) => sum + over, 0)} requests in total under ${admission[0]?.attempts ?? 0} concurrent attempts per round (rate-limiter-flexible: ${rlfOver.reduce((sum, over) => sum + over, 0)}): ${verdict(zeroOver)}.`,
    `- "Within 80% of the EVALSHA floor": Spillway ÷ floor throughput is ${range(toFloor)}: ${verdict(nearFloor)}.`,
  ];
  if (!fastAsRlf || !nearFloor) {
    lines.push(
      "",
      `Why: Redis runs one script at a time, so the Redis time per decision sets the ceiling. Median Redis time per decision: EVALSHA floor ${us(FLOOR_EVALSHA)} µs, rate-limiter-flexible ${us(RATE_LIMITER_FLEXIBLE)} µs, Spillway GCRA ${us(SPILLWAY_GCRA)} µs, Spillway sliding-window ${us(SPILLWAY_SLIDING_WINDOW)} µs.`,
      "Spillway's is one FCALL (its Lua library is loaded once per server, so a call defines nothing) with the stack's keys and policy arguments,",
      "three commands (TIME, GET of the compact state, SET … PXAT), the algorithm and the stacked-policy combiner in Lua, and a reply of 4 + 3 per policy integers.",
      `Without FUNCTION (Redis < 7) it is one EVALSHA of a script holding only the stack's algorithms, whose definitions add ${libraryUs.toFixed(1)} µs (GCRA).`,
      "rate-limiter-flexible's script is SET NX + INCRBY + PTTL on a plain counter.",
    );
  }
  return lines;
}
