import { expect } from "vitest";
import type { StoredState } from "../../../src/core/algorithms.js";
import type { DecideInput } from "../../../src/core/decision.js";
import { KeyState } from "../../../src/core/key-state.js";
import { parsePolicy } from "../../../src/core/policy.js";
import type { Decision, Policy } from "../../../src/core/types.js";

/** A validated policy named "p" unless the fields say otherwise. */
export function policyOf(fields: Record<string, unknown>): Policy {
  return parsePolicy({ name: "p", ...fields }, "policy");
}

export const reject = (cost = 1): DecideInput => ({ cost, mode: "reject", maxWaitMs: 0 });
export const reserve = (cost: number, maxWaitMs: number): DecideInput => ({ cost, mode: "reserve", maxWaitMs });
export const peek = (): DecideInput => reject(0);

/** A stable text of every state a key holds, to prove a decision changed nothing. */
export function snapshot(key: KeyState): string {
  return JSON.stringify([...key.states].sort(([a], [b]) => a.localeCompare(b)));
}

/** A deep copy, so "what would happen at time t" can be asked without touching the original. */
export function cloneKey(key: KeyState): KeyState {
  return new KeyState(structuredClone([...key.states]) as [string, StoredState][]);
}

/**
 * One key checked against a fixed stack with an injected clock. Concurrency admissions
 * get lease ids `lease-1`, `lease-2`, … unless the input names one.
 */
export class Subject {
  readonly policies: readonly Policy[];
  readonly key: KeyState;
  private leaseCount = 0;
  constructor(policies: readonly Policy[], key = new KeyState()) {
    this.policies = policies;
    this.key = key;
  }

  check(nowMs: number, input: DecideInput = reject()): Decision {
    const leaseId = input.leaseId ?? `lease-${++this.leaseCount}`;
    return this.key.check(this.policies, nowMs, { ...input, leaseId }).decision;
  }

  /** Checks `count` times at one instant and returns every decision. */
  checkTimes(count: number, nowMs: number, input: DecideInput = reject()): Decision[] {
    return Array.from({ length: count }, () => this.check(nowMs, input));
  }

  snapshot(): string {
    return snapshot(this.key);
  }

  clone(): Subject {
    return new Subject(this.policies, cloneKey(this.key));
  }
}

/**
 * Runs the same checks on this subject and on a fresh key from `fromMs` on, and returns
 * both decision lists: equal lists mean the old state no longer matters.
 */
export function compareWithFresh(subject: Subject, steps: readonly [offsetMs: number, input: DecideInput][], fromMs: number) {
  const old = subject.clone();
  const fresh = new Subject(subject.policies);
  const run = (target: Subject) => steps.map(([offsetMs, input]) => target.check(fromMs + offsetMs, input));
  return { old: run(old), fresh: run(fresh) };
}

/** A request schedule that drains any small policy and then probes its refill. */
export const DRAIN_AND_PROBE: [offsetMs: number, input: DecideInput][] = [
  [0, reject()],
  [0, reject()],
  [0, reject(2)],
  [0, reject()],
  [0, reject()],
  [0, reject()],
  [1, reject()],
  [137, reject()],
  [400, reject(2)],
  [999, reject()],
  [1000, reject()],
  [1500, reserve(1, 5000)],
  [1500, peek()],
];

/**
 * Expiry as every algorithm promises it: 1 ms before `freshAtMs` the key still decides
 * `steps` unlike a fresh key, and from `freshAtMs` on (then 1 ms and a day later) exactly
 * like one, so dropping the state then loses nothing.
 */
export function expectFreshFrom(subject: Subject, freshAtMs: number, steps: readonly [offsetMs: number, input: DecideInput][] = DRAIN_AND_PROBE): void {
  const early = compareWithFresh(subject, steps, freshAtMs - 1);
  expect(early.old, `1 ms before ${freshAtMs}`).not.toEqual(early.fresh);
  for (const fromMs of [freshAtMs, freshAtMs + 1, freshAtMs + 86_400_000]) {
    const { old, fresh } = compareWithFresh(subject, steps, fromMs);
    expect(old, `from ${fromMs}`).toEqual(fresh);
  }
}
