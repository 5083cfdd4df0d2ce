// The goals of issue 3, set next to what bench:redis measured.
import { type AdmissionResult, overAdmitted } from "./redis-admission.js";
import { type Contender, FLOOR_COMMANDS_ONLY, FLOOR_EVALSHA, FLOOR_MINIMAL_GCRA, RATE_LIMITER_FLEXIBLE, SPILLWAY_GCRA, SPILLWAY_GCRA_SENT_AT_ONCE, SPILLWAY_SLIDING_WINDOW } from "./redis-contenders.js";
import { type CellResult, type ThroughputOptions, type ThroughputResults, cellId } from "./redis-throughput.js";

const RLF_GOAL = 1;
const FLOOR_GOAL = 0.8;
const SPILLWAY = [SPILLWAY_GCRA, SPILLWAY_SLIDING_WINDOW];

interface Ratios {
  toRlf: number[];
  toFloor: number[];
  /** Not a goal: Spillway GCRA ÷ the same with coalesceWrites: false. */
  coalescingGain: number[];
  /** Not a goal: Spillway GCRA ÷ its commands alone (FCALL of TIME + GET + SET), by caller count. */
  toCommandsByCallers: Map<number, number[]>;
  /** Not a goal: rate-limiter-flexible ÷ the same. */
  rlfToCommands: number[];
  /** Not a goal: the minimal exact GCRA ÷ rate-limiter-flexible, and Spillway GCRA ÷ the minimal GCRA, by caller count. */
  minimalToRlfByCallers: Map<number, number[]>;
  toMinimalByCallers: Map<number, number[]>;
}

function ratios(options: ThroughputOptions, results: ThroughputResults): Ratios {
  const out: Ratios = { toRlf: [], toFloor: [], coalescingGain: [], toCommandsByCallers: new Map(), rlfToCommands: [], minimalToRlfByCallers: new Map(), toMinimalByCallers: new Map() };
  for (const keyCount of options.keyCounts) {
    for (const concurrency of options.concurrencies) {
      const rate = (contender: Contender) => results.get(cellId(keyCount, concurrency, contender))?.perSecond ?? Number.NaN;
      for (const spillway of SPILLWAY) {
        out.toRlf.push(rate(spillway) / rate(RATE_LIMITER_FLEXIBLE));
        out.toFloor.push(rate(spillway) / rate(FLOOR_EVALSHA));
      }
      out.coalescingGain.push(rate(SPILLWAY_GCRA) / rate(SPILLWAY_GCRA_SENT_AT_ONCE));
      pushTo(out.toCommandsByCallers, concurrency, rate(SPILLWAY_GCRA_SENT_AT_ONCE) / rate(FLOOR_COMMANDS_ONLY));
      pushTo(out.minimalToRlfByCallers, concurrency, rate(FLOOR_MINIMAL_GCRA) / rate(RATE_LIMITER_FLEXIBLE));
      // Sent at once, like the minimal GCRA (plain ioredis).
      pushTo(out.toMinimalByCallers, concurrency, rate(SPILLWAY_GCRA_SENT_AT_ONCE) / rate(FLOOR_MINIMAL_GCRA));
      out.rlfToCommands.push(rate(RATE_LIMITER_FLEXIBLE) / rate(FLOOR_COMMANDS_ONLY));
    }
  }
  return out;
}

function pushTo(byCallers: Map<number, number[]>, callers: number, value: number): void {
  const values = byCallers.get(callers) ?? [];
  values.push(value);
  byCallers.set(callers, values);
}

const byCallersText = (byCallers: Map<number, number[]>) =>
  [...byCallers].map(([callers, values]) => `${range(values)} at ${callers} caller${callers === 1 ? "" : "s"}`).join(", ");

/** The value below which a share `q` of the sorted `values` lie (nearest rank). */
function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))] ?? Number.NaN;
}

/**
 * Turn by turn, one contender ÷ another in one cell: turn i of each falls in the same slice,
 * seconds apart, so each pair shares the machine's speed of the moment. Their spread is how
 * far a single cell's ratio can be trusted on this machine.
 */
function pairedSpread(results: ThroughputResults, keyCount: number, callers: number, over: Contender, under: Contender): string {
  const a = results.get(cellId(keyCount, callers, over))?.turnRates ?? [];
  const b = results.get(cellId(keyCount, callers, under))?.turnRates ?? [];
  const pairs = a.slice(0, b.length).map((rate, index) => rate / b[index]!).sort((x, y) => x - y);
  if (pairs.length === 0) return "–";
  return `median ${quantile(pairs, 0.5).toFixed(2)}, middle half ${quantile(pairs, 0.25).toFixed(2)}–${quantile(pairs, 0.75).toFixed(2)}, all ${range(pairs)}`;
}

/** Median over every cell of a contender of one per-call measure. */
function medianOf(options: ThroughputOptions, results: ThroughputResults, contender: Contender, measure: (result: CellResult) => number | undefined): number {
  const values: number[] = [];
  for (const keyCount of options.keyCounts) {
    for (const concurrency of options.concurrencies) {
      const result = results.get(cellId(keyCount, concurrency, contender));
      const value = result && measure(result);
      if (value !== undefined && Number.isFinite(value)) values.push(value);
    }
  }
  values.sort((a, b) => a - b);
  return values[Math.floor(values.length / 2)] ?? Number.NaN;
}

/** Median Redis time per decision of a contender over every cell. */
export function medianRedisUs(options: ThroughputOptions, results: ThroughputResults, contender: Contender): number {
  return medianOf(options, results, contender, (result) => result.redisUsPerCall);
}

const geometricMean = (values: number[]) => Math.exp(values.reduce((sum, value) => sum + Math.log(value), 0) / values.length);

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
  /** Redis µs per call of defining the single-policy GCRA script's Lua (the EVALSHA fallback), then `return 1`. */
  libraryUs: number;
}

export function goalLines({ options, results, admission, libraryUs }: GoalInputs): string[] {
  const { toRlf, toFloor, coalescingGain, toCommandsByCallers, rlfToCommands, minimalToRlfByCallers, toMinimalByCallers } = ratios(options, results);
  const spillwayOver = admission.filter((result) => result.contender.id.startsWith("spillway-")).map(overAdmitted);
  const rlfOver = admission.filter((result) => result.contender === RATE_LIMITER_FLEXIBLE).map(overAdmitted);
  const fastAsRlf = toRlf.every((ratio) => ratio >= RLF_GOAL);
  const zeroOver = spillwayOver.length > 0 && spillwayOver.every((over) => over === 0);
  const nearFloor = toFloor.every((ratio) => ratio >= FLOOR_GOAL);
  const us = (contender: Contender) => medianRedisUs(options, results, contender).toFixed(1);
  const cpu = (contender: Contender) => {
    const node = medianOf(options, results, contender, (result) => result.nodeCpuUsPerCall);
    const redis = medianOf(options, results, contender, (result) => result.redisCpuUsPerCall);
    return { total: node + redis, text: `Node ${node.toFixed(1)} + Redis ${redis.toFixed(1)} = ${(node + redis).toFixed(1)} µs` };
  };
  const rlfCpu = cpu(RATE_LIMITER_FLEXIBLE);
  const lines = [
    `- "At least as fast as rate-limiter-flexible": Spillway ÷ rlf throughput is ${range(toRlf)} over the ${toRlf.length} cells (GCRA and sliding-window, every key count and caller count), geometric mean ${geometricMean(toRlf).toFixed(2)}: ${verdict(fastAsRlf)} (met only when every cell reaches it).`,
    `- "With zero over-admission": Spillway over-admitted ${spillwayOver.reduce((sum, over) => sum + over, 0)} requests in total under ${admission[0]?.attempts ?? 0} concurrent attempts per round (rate-limiter-flexible: ${rlfOver.reduce((sum, over) => sum + over, 0)}): ${verdict(zeroOver)}.`,
    `- "Within 80% of the EVALSHA floor": Spillway ÷ floor throughput is ${range(toFloor)}, geometric mean ${geometricMean(toFloor).toFixed(2)}: ${verdict(nearFloor)} (met only when every cell reaches it).`,
    "",
    "Spillway's store coalesces its writes under load (src/stores/redis/coalesce.ts), which the floor and rate-limiter-flexible, plain ioredis, do not.",
    `What that is worth: Spillway GCRA ÷ the same with \`coalesceWrites: false\` is ${range(coalescingGain)} (geometric mean ${geometricMean(coalescingGain).toFixed(2)}).`,
    "",
    "CPU per decision, the steadier measure on a shared machine (median over the cells; Node is the bench process, load generator included and the same for every contender; Redis is its whole process, I/O included):",
    "",
    ...[FLOOR_EVALSHA, RATE_LIMITER_FLEXIBLE, ...SPILLWAY].map((contender) => {
      const measured = cpu(contender);
      const ratio = contender === RATE_LIMITER_FLEXIBLE ? "" : ` (${(measured.total / rlfCpu.total).toFixed(2)}× rate-limiter-flexible's)`;
      return `- ${contender.label}: ${measured.text}${ratio}.`;
    }),
  ];
  if (!fastAsRlf || !nearFloor) {
    lines.push(
      "",
      `Where the time goes: Redis runs one script at a time. Median Redis script time per decision: EVALSHA floor ${us(FLOOR_EVALSHA)} µs, rate-limiter-flexible ${us(RATE_LIMITER_FLEXIBLE)} µs, Spillway GCRA ${us(SPILLWAY_GCRA)} µs, Spillway sliding-window ${us(SPILLWAY_SLIDING_WINDOW)} µs.`,
      "A single-policy Spillway decision is one FCALL (its Lua library is loaded once per server) with one key and one argument, the policy (single.lua). The script reads the server clock (TIME), GETs the compact state,",
      "decides admission with the algorithm's Lua, writes the new state with SET … PXAT (expiring when it becomes fresh; KEEPTTL when that moment did not move, as when a window's count goes up), and answers one string: admitted or not, the clock and the state it read.",
      "Node computes the rest of the decision (remaining, reset, retry times) from those with src/core, and checks that it agrees on admission.",
      `Without FUNCTION (Redis < 7) it is one EVALSHA of a script holding only the stack's algorithms, whose definitions add ${libraryUs.toFixed(1)} µs (GCRA, measured end to end against FCALL).`,
      "rate-limiter-flexible's script is SET NX + INCRBY + PTTL on a plain counter: no clock, no state to parse or format.",
      "",
      "What Spillway's own logic costs, Lua and Node, against the FCALL of its commands alone (TIME + GET + SET … PXAT, no logic; both with writes sent at once, like that floor):",
      `Spillway GCRA ÷ commands-only floor is ${byCallersText(toCommandsByCallers)};`,
      `rate-limiter-flexible ÷ the same is ${range(rlfToCommands)}.`,
      "",
      "The least a limiter that is exact, uses the server's clock and answers a whole decision can do: a hand-written GCRA for one fixed policy (TIME, GET, SET … PXAT, Spillway's reply), with the decision computed in Node as Spillway does:",
      `minimal GCRA ÷ rate-limiter-flexible is ${byCallersText(minimalToRlfByCallers)};`,
      `Spillway GCRA (writes sent at once, like it) ÷ minimal GCRA is ${byCallersText(toMinimalByCallers)}.`,
      "",
      "How far one cell's ratio can be trusted here, turn by turn (each of the cell's turn pairs ran seconds apart):",
      ...options.keyCounts.flatMap((keyCount) =>
        SPILLWAY.map((spillway) => `- ${keyCount.toLocaleString("en-US")} key${keyCount === 1 ? "" : "s"}, 1 caller, ${spillway.label} ÷ rate-limiter-flexible: ${pairedSpread(results, keyCount, 1, spillway, RATE_LIMITER_FLEXIBLE)}.`),
      ),
    );
  }
  return lines;
}
