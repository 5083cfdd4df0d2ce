import fc from "fast-check";
import { expect } from "vitest";
import { capacityOf, liveState } from "../../../src/core/algorithms.js";
import type { DecideInput } from "../../../src/core/decision.js";
import { KeyState } from "../../../src/core/key-state.js";
import { parsePolicy } from "../../../src/core/policy.js";
import type { AlgorithmName, Decision, Policy } from "../../../src/core/types.js";
import { snapshot } from "./core-helpers.js";
import { boundViolation } from "./property-bounds.js";

/** Property runs stay small so the whole unit project stays fast. */
export const RUNS = { numRuns: Number(process.env.RUNS ?? 150) } as const;

/** The span a policy's rule is about: its period, or a concurrency policy's lease. */
export function horizonMs(policy: Policy): number {
  return policy.algorithm === "concurrency" ? policy.leaseMs : policy.periodMs;
}

/** Small random policies: small limits and periods make collisions and refills frequent. */
export function policyArb(algorithm: AlgorithmName, name = "p"): fc.Arbitrary<Policy> {
  const limit = fc.integer({ min: 1, max: 6 });
  const periodMs = fc.integer({ min: 1, max: 60 });
  if (algorithm === "concurrency") {
    return fc.record({ limit: fc.integer({ min: 1, max: 4 }), leaseMs: fc.integer({ min: 1, max: 60 }) }).map(({ limit, leaseMs }) => parsePolicy({ name, algorithm, limit, lease: leaseMs }, "policy"));
  }
  if (algorithm === "gcra" || algorithm === "token-bucket") {
    return fc
      // burst 1 is the tightest spacing, where rounding a slot shows first.
      .record({ limit, periodMs, burst: fc.oneof(fc.constant(undefined), fc.constant(1), fc.integer({ min: 1, max: 8 })) })
      .map(({ limit, periodMs, burst }) => parsePolicy({ name, algorithm, limit, period: periodMs, ...(burst === undefined ? {} : { burst }) }, "policy"));
  }
  return fc.record({ limit, periodMs }).map(({ limit, periodMs }) => parsePolicy({ name, algorithm, limit, period: periodMs }, "policy"));
}

export const ALL_ALGORITHMS: readonly AlgorithmName[] = ["gcra", "token-bucket", "fixed-window", "sliding-window", "sliding-log", "concurrency"];

/** 1 to 3 policies of any algorithms, named s0, s1, s2. */
export const stackArb: fc.Arbitrary<Policy[]> = fc
  .array(fc.constantFrom(...ALL_ALGORITHMS), { minLength: 1, maxLength: 3 })
  .chain((algorithms) => fc.tuple(...algorithms.map((algorithm, index) => policyArb(algorithm, `s${index}`))));

/** One request of a trace. Gaps are often 0 so that bursts happen at one instant. */
export interface TraceStep {
  gapMs: number;
  cost: number;
  mode: "reject" | "reserve";
  maxWaitMs: number;
}

export function stepArb(maxCost: number, maxGapMs: number): fc.Arbitrary<TraceStep> {
  return fc.record({
    gapMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: maxGapMs })),
    // Cost 0 peeks; maxCost + 1 is above capacity.
    cost: fc.oneof({ arbitrary: fc.constant(1), weight: 3 }, { arbitrary: fc.integer({ min: 0, max: maxCost + 1 }), weight: 2 }),
    mode: fc.constantFrom("reject" as const, "reserve" as const),
    maxWaitMs: fc.integer({ min: 0, max: 3 * maxGapMs }),
  });
}

/** A policy with a random trace sized to it. */
export function policyTraceArb(algorithm: AlgorithmName, options: { reserve?: boolean } = {}): fc.Arbitrary<{ policy: Policy; steps: TraceStep[] }> {
  return policyArb(algorithm).chain((policy) =>
    fc.record({
      policy: fc.constant(policy),
      steps: fc.array(stepArb(capacityOf(policy), 2 * horizonMs(policy)), { maxLength: 40 }).map((steps) =>
        options.reserve === false ? steps.map((step) => ({ ...step, mode: "reject" as const })) : steps,
      ),
    }),
  );
}

export function stackTraceArb(): fc.Arbitrary<{ policies: Policy[]; steps: TraceStep[] }> {
  return stackArb.chain((policies) => {
    const maxCost = Math.max(...policies.map(capacityOf));
    const maxGapMs = 2 * Math.max(...policies.map(horizonMs));
    return fc.record({ policies: fc.constant(policies), steps: fc.array(stepArb(maxCost, maxGapMs), { maxLength: 40 }) });
  });
}

/** An admitted request at the time its caller acts: now + waitMs. */
export interface Admission {
  atMs: number;
  cost: number;
}

export interface StepRecord {
  nowMs: number;
  input: DecideInput;
  decision: Decision;
  /** Whether any stored state changed. */
  stateChanged: boolean;
  /** Names of the policies the decision wrote. */
  written: string[];
}

export interface TraceRun {
  records: StepRecord[];
  admissions: Admission[];
  /** Per policy: the scheduled times of admissions made while its state was fresh (token-bucket refill grids start there). */
  freshStartsMs: Map<string, number[]>;
  key: KeyState;
}

export function inputOf(step: TraceStep): DecideInput {
  return { cost: step.cost, mode: step.mode, maxWaitMs: step.maxWaitMs };
}

/**
 * Runs a trace on a fresh key starting at `startMs`, recording everything the properties
 * look at. `afterStep` sees each decision with the key as it stands right after it.
 */
export function runTrace(policies: readonly Policy[], steps: readonly TraceStep[], startMs = 0, afterStep?: (record: StepRecord, key: KeyState) => void): TraceRun {
  const key = new KeyState();
  const run: TraceRun = { records: [], admissions: [], freshStartsMs: new Map(policies.map((p) => [p.name, []])), key };
  let nowMs = startMs;
  steps.forEach((step, index) => {
    nowMs += step.gapMs;
    const wasFresh = policies.map((policy) => liveState(key.states.get(policy.name), policy, nowMs) === undefined);
    const before = snapshot(key);
    const input: DecideInput = { ...inputOf(step), leaseId: `lease-${index}` };
    const { decision, changes } = key.check(policies, nowMs, input);
    const record: StepRecord = { nowMs, input, decision, stateChanged: snapshot(key) !== before, written: [...changes.keys()] };
    run.records.push(record);
    afterStep?.(record, key);
    if (decision.allowed && step.cost > 0) {
      const atMs = nowMs + decision.waitMs;
      run.admissions.push({ atMs, cost: step.cost });
      policies.forEach((policy, i) => {
        if (wasFresh[i]) run.freshStartsMs.get(policy.name)!.push(atMs);
      });
    }
  });
  return run;
}

/**
 * The bound property of one algorithm: no random trace of a single policy admits more than
 * the algorithm promises (core/property-bounds.ts), reserved requests counted at now + waitMs.
 */
export function assertBound(algorithm: AlgorithmName): void {
  fc.assert(
    fc.property(policyTraceArb(algorithm), ({ policy, steps }) => {
      expect(boundViolation(policy, runTrace([policy], steps))).toBeNull();
    }),
    RUNS,
  );
}

/**
 * Admits `cost` at `nowMs` if the rule says so, taking it (then true), or leaves the state
 * alone (false): an algorithm's rule written out independently of the core.
 */
export type ModelTake = (nowMs: number, cost: number) => boolean;

/**
 * The exactness property of one algorithm: in reject mode the core admits a request that
 * could ever fit (cost 1 to capacity) exactly when a fresh `modelOf(policy)` does.
 */
export function assertDecidesLikeModel(algorithm: AlgorithmName, modelOf: (policy: Policy) => ModelTake): void {
  fc.assert(
    fc.property(policyTraceArb(algorithm, { reserve: false }), ({ policy, steps }) => {
      const take = modelOf(policy);
      for (const { nowMs, input, decision } of runTrace([policy], steps).records) {
        if (input.cost === 0 || input.cost > capacityOf(policy)) continue;
        expect(decision.allowed, `cost ${input.cost} at ${nowMs}`).toBe(take(nowMs, input.cost));
      }
    }),
    RUNS,
  );
}
