/**
 * The conformance table: one list of scenarios that every store must decide identically
 * (the pure core, the memory store, the Durable Object, Redis standalone and Cluster).
 * The expected answer of each step is whatever the pure core answers; `expect` fields
 * are extra sanity checks so that the core itself can fail.
 *
 * Pure TypeScript with core imports only: it must also load inside workerd.
 */
import { stackLeaseMs } from "../../src/core/concurrency.js";
import { KeyState } from "../../src/core/key-state.js";
import { parsePolicy } from "../../src/core/policy.js";
import { creditsAnswer } from "../../src/core/credits.js";
import { rateLimitHeaders } from "../../src/core/headers.js";
import { ValidationError } from "../../src/core/validation.js";
import { consumes } from "../../src/core/costs.js";
import type { AcquireOptions, AcquireResult, CheckMode, CheckOptions, CreditsChange, CreditsResult, DebitCost, Decision, ExtendResult, Policy, PolicyCosts, ReleaseResult } from "../../src/core/types.js";
import type { Limiter } from "../../src/core/limiter.js";

/** What a store must offer the runner: every call carries the (injected) time. */
export interface ConformanceAdapter {
  check(key: string, policies: readonly Policy[], options: CheckOptions, nowMs: number): Promise<Decision>;
  peek(key: string, policies: readonly Policy[], nowMs: number): Promise<Decision>;
  /** `spentAtMs`: a refund's spend time, on the same clock as nowMs (Limiter.debit). */
  debit(key: string, policies: readonly Policy[], cost: DebitCost, nowMs: number, spentAtMs?: number): Promise<Decision>;
  reset(key: string, policies: readonly Policy[], nowMs: number): Promise<void>;
  /** Always called with maxWaitMs 0: waiting is real-time and tested per store. */
  acquire(key: string, policies: readonly Policy[], options: AcquireOptions, nowMs: number): Promise<AcquireResult>;
  release(key: string, policies: readonly Policy[], leaseId: string, nowMs: number): Promise<ReleaseResult>;
  extend(key: string, policies: readonly Policy[], leaseId: string, leaseMs: number | undefined, nowMs: number): Promise<ExtendResult>;
  credits(key: string, policy: Policy, change: CreditsChange, nowMs: number): Promise<CreditsResult>;
}

interface StepBase {
  /** Time from the scenario's start, in ms. */
  atMs: number;
  /** Labels of the scenario's policies to stack (default: all, in table order). */
  use?: string[];
  /** User key (default "k"). */
  key?: string;
  /** A sanity check of a decision's every policy: `remaining` of each, in stack order. */
  remaining?: number[];
  /**
   * A decision's RateLimit headers as the stack's policies print them (rateLimitHeaders, legacy
   * ones too): when set, every store's outcome carries them, and the core's must equal these.
   */
  headers?: Record<string, string>;
}

export type Step =
  | (StepBase & { op: "check"; cost?: number; costs?: PolicyCosts; mode?: CheckMode; maxWaitMs?: number; as?: string; expect?: Partial<Decision> })
  | (StepBase & { op: "peek"; expect?: Partial<Decision> })
  | (StepBase & { op: "debit"; cost: DebitCost; spentAtMs?: number; expect?: Partial<Decision> })
  | (StepBase & { op: "reset" })
  | (StepBase & { op: "acquire"; leaseMs?: number; as?: string; expect?: Partial<AcquireResult> })
  | (StepBase & { op: "release"; lease: string; expect?: Partial<ReleaseResult> })
  | (StepBase & { op: "extend"; lease: string; leaseMs?: number; expect?: Partial<ExtendResult> })
  | (StepBase & { op: "credits"; change: CreditsChange; expect?: Partial<CreditsResult> | { refused: string } });

export interface Scenario {
  name: string;
  /** Policy inputs (JSON as README "Algorithms" writes them) by label; two labels may share a policy name (redefinition). */
  policies: Record<string, Record<string, unknown>>;
  steps: Step[];
  /** The scenario's time 0 (default BASE_MS): calendar scenarios start before a month end or an offset change. */
  baseMs?: number;
}

/** Scenario time 0: a day boundary, so aligned windows start there. */
export const BASE_MS = 1_699_920_000_000;

export interface Outcome {
  step: number;
  op: Step["op"];
  /** JSON-normalized result; lease ids replaced by "lease:<label or n>". */
  result: unknown;
}

export function policiesOf(scenario: Scenario, use?: string[]): Policy[] {
  return (use ?? Object.keys(scenario.policies)).map((label) => {
    const input = scenario.policies[label];
    if (!input) throw new Error(`${scenario.name}: no policy labelled ${label}`);
    return parsePolicy(input, `policies.${label}`);
  });
}

/**
 * Runs one scenario against a store and returns what it answered, step by step, in a form
 * two stores can be compared with (`toEqual`). Keys are prefixed with `keyPrefix` so that
 * runs sharing a store do not meet.
 */
export async function runScenario(scenario: Scenario, adapter: ConformanceAdapter, keyPrefix = ""): Promise<Outcome[]> {
  const leases = new Map<string, string>(); // label → real lease id
  const names = new Map<string, string>(); // real lease id → stable name
  const outcomes: Outcome[] = [];
  const remember = (leaseId: string | undefined, label: string | undefined) => {
    if (!leaseId) return;
    if (label) leases.set(label, leaseId);
    if (!names.has(leaseId)) names.set(leaseId, `lease:${label ?? names.size}`);
  };
  for (const [index, step] of scenario.steps.entries()) {
    const key = `${keyPrefix}${step.key ?? "k"}`;
    const policies = policiesOf(scenario, step.use);
    const nowMs = (scenario.baseMs ?? BASE_MS) + step.atMs;
    let result: unknown;
    switch (step.op) {
      case "check": {
        const options: CheckOptions = { cost: step.cost ?? 1, mode: step.mode ?? "reject", maxWaitMs: step.maxWaitMs ?? 0 };
        if (step.costs !== undefined) options.costs = step.costs;
        const decision = await adapter.check(key, policies, options, nowMs);
        remember(decision.leaseId, step.as);
        result = decision;
        break;
      }
      case "peek":
        result = await adapter.peek(key, policies, nowMs);
        break;
      case "debit":
        // spentAtMs is scenario time, as atMs is.
        result = step.spentAtMs === undefined ? await adapter.debit(key, policies, step.cost, nowMs) : await adapter.debit(key, policies, step.cost, nowMs, (scenario.baseMs ?? BASE_MS) + step.spentAtMs);
        break;
      case "reset":
        await adapter.reset(key, policies, nowMs);
        result = null;
        break;
      case "acquire": {
        const acquired = await adapter.acquire(key, policies, { maxWaitMs: 0, leaseMs: step.leaseMs }, nowMs);
        if (acquired.acquired) remember(acquired.leaseId, step.as);
        result = acquired;
        break;
      }
      case "release":
        result = await adapter.release(key, policies, leases.get(step.lease) ?? `unknown-${step.lease}`, nowMs);
        break;
      case "extend":
        result = await adapter.extend(key, policies, leases.get(step.lease) ?? `unknown-${step.lease}`, step.leaseMs, nowMs);
        break;
      case "credits":
        try {
          result = await adapter.credits(key, policies[0]!, step.change, nowMs);
        } catch (error) {
          // A change past the balance's cap is refused naming its field, on every store.
          if (!(error instanceof ValidationError)) throw error;
          result = { refused: error.field };
        }
        break;
    }
    if (step.headers && result) result = { ...(result as Decision), headers: rateLimitHeaders(result as Decision, policies, { legacy: true }) };
    outcomes.push({ step: index, op: step.op, result: normalize(result, names) });
  }
  return outcomes;
}

/** JSON round trip (drops undefined, turns -0 into 0) with lease ids named stably. */
function normalize(value: unknown, names: Map<string, string>): unknown {
  return JSON.parse(JSON.stringify(value ?? null, (field, item: unknown) => (field === "leaseId" && typeof item === "string" ? (names.get(item) ?? "lease:?") : item)));
}

/** Steps whose `expect` did not match what the store answered (for the core's own test). */
export function unmetExpectations(scenario: Scenario, outcomes: Outcome[]): string[] {
  const problems: string[] = [];
  scenario.steps.forEach((step, index) => {
    const actual = outcomes[index]?.result as Record<string, unknown> | null;
    if (step.remaining) {
      const got = (actual?.policies as { remaining: number }[] | undefined)?.map((part) => part.remaining);
      if (JSON.stringify(got) !== JSON.stringify(step.remaining)) problems.push(`${scenario.name} step ${index} (${step.op} at ${step.atMs}): remaining = ${JSON.stringify(got)}, expected ${JSON.stringify(step.remaining)}`);
    }
    const expectations = { ...("expect" in step ? step.expect : undefined), ...(step.headers ? { headers: step.headers } : undefined) };
    for (const [field, expected] of Object.entries(expectations)) {
      const got = actual?.[field];
      if (JSON.stringify(got) !== JSON.stringify(expected)) problems.push(`${scenario.name} step ${index} (${step.op} at ${step.atMs}): ${field} = ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`);
    }
  });
  return problems;
}

/** The reference: KeyState (the pure core) per key, with deterministic lease ids. */
export function coreAdapter(): ConformanceAdapter & { stateOf(key: string): KeyState } {
  const keys = new Map<string, KeyState>();
  let leaseCount = 0;
  const stateOf = (key: string) => {
    let state = keys.get(key);
    if (!state) keys.set(key, (state = new KeyState()));
    return state;
  };
  const hasConcurrency = (policies: readonly Policy[]) => policies.some((policy) => policy.algorithm === "concurrency");
  return {
    stateOf,
    async check(key, policies, options, nowMs) {
      const leaseId = hasConcurrency(policies) && consumes(options) ? `core-${++leaseCount}` : undefined;
      return stateOf(key).check(policies, nowMs, { ...options, leaseId }).decision;
    },
    async peek(key, policies, nowMs) {
      return stateOf(key).check(policies, nowMs, { cost: 0, mode: "reject", maxWaitMs: 0, peek: true }).decision;
    },
    async debit(key, policies, cost, nowMs, spentAtMs) {
      return stateOf(key).debit(policies, nowMs, cost, spentAtMs).decision;
    },
    async reset(key, policies) {
      stateOf(key).reset(policies);
    },
    async acquire(key, policies, options, nowMs) {
      const leaseId = `core-${++leaseCount}`;
      const { decision } = stateOf(key).check(policies, nowMs, { cost: 1, mode: "reject", maxWaitMs: 0, leaseId, leaseMs: options.leaseMs });
      if (!decision.allowed) return { acquired: false, retryAfterMs: decision.retryAfterMs };
      return { acquired: true, leaseId, leaseMs: decision.leaseMs ?? options.leaseMs ?? 0, limit: decision.limit, remaining: decision.remaining };
    },
    async release(key, policies, leaseId, nowMs) {
      return { released: stateOf(key).release(policies, leaseId, nowMs).released };
    },
    async extend(key, policies, leaseId, leaseMs, nowMs) {
      const lengthMs = leaseMs ?? stackLeaseMs(policies);
      return { extended: stateOf(key).extend(policies, leaseId, nowMs, lengthMs).extended, leaseMs: lengthMs };
    },
    async credits(key, policy, change, nowMs) {
      return creditsAnswer(stateOf(key).credits(policy, nowMs, change));
    },
  };
}

/** The operations a store on an injected clock offers (MemoryStore, RedisStore). */
export type ClockedStore = Pick<Limiter, "check" | "peek" | "debit" | "reset" | "acquire" | "release" | "extend" | "credits">;

/**
 * Drives a store built on the clock it is handed: each call first sets that clock to the
 * step's time. The Durable Object keeps its clock inside the object and has its own adapter.
 */
export function clockedAdapter<S extends ClockedStore>(makeStore: (clockMs: () => number) => S): ConformanceAdapter & { store: S } {
  let nowMs = BASE_MS;
  const store = makeStore(() => nowMs);
  const at = <T>(timeMs: number, call: () => Promise<T>) => {
    nowMs = timeMs;
    return call();
  };
  return {
    store,
    check: (key, policies, options, timeMs) => at(timeMs, () => store.check(key, policies, options)),
    peek: (key, policies, timeMs) => at(timeMs, () => store.peek(key, policies)),
    debit: (key, policies, cost, timeMs, spentAtMs) => at(timeMs, () => store.debit(key, policies, cost, spentAtMs)),
    reset: (key, policies, timeMs) => at(timeMs, () => store.reset(key, policies)),
    acquire: (key, policies, options, timeMs) => at(timeMs, () => store.acquire(key, policies, options)),
    release: (key, policies, leaseId, timeMs) => at(timeMs, () => store.release(key, policies, leaseId)),
    extend: (key, policies, leaseId, leaseMs, timeMs) => at(timeMs, () => store.extend(key, policies, leaseId, leaseMs)),
    credits: (key, policy, change, timeMs) => at(timeMs, () => store.credits(key, policy, change)),
  };
}

import { SCENARIOS as RATE_SCENARIOS } from "./scenario-table.js";
import { BLOCK_SCENARIOS } from "./scenario-table-block.js";
import { DEBIT_SCENARIOS } from "./scenario-table-debit.js";
import { CALENDAR_SCENARIOS } from "./scenario-table-calendar.js";
import { CREDITS_SCENARIOS } from "./scenario-table-credits.js";
import { REFUND_SCENARIOS } from "./scenario-table-refund.js";
import { SPENT_AT_SCENARIOS } from "./scenario-table-spent-at.js";
import { BUDGET_SCENARIOS } from "./scenario-table-budget.js";
import { COSTS_SCENARIOS } from "./scenario-table-costs.js";

export const SCENARIOS: Scenario[] = [...RATE_SCENARIOS, ...DEBIT_SCENARIOS, ...BLOCK_SCENARIOS, ...CALENDAR_SCENARIOS, ...CREDITS_SCENARIOS, ...REFUND_SCENARIOS, ...SPENT_AT_SCENARIOS, ...BUDGET_SCENARIOS, ...COSTS_SCENARIOS];
