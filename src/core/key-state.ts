import type { StoredState } from "./algorithms.js";
import { type ConcurrencyState, concurrencyPolicies, extendLease, releaseLease } from "./concurrency.js";
import { type CreditsOutcome, type CreditsState, changeCredits, credits, pastBalanceCap } from "./credits.js";
import { lastUntilMs } from "./entries.js";
import { type DecideInput, type DecideOutput, type StateChange, decide, stateChange } from "./decision.js";
import { liveBlockMs, liveState } from "./algorithms.js";
import { floorCount } from "./algorithm.js";
import { debit } from "./debit.js";
import type { CreditsChange, DebitCost, Policy } from "./types.js";

/** The states read by readCurrent: the KeyState whose decide or debit runs now (see KeyState.reader). */
let reading: ReadonlyMap<string, StoredState> = new Map();
const readCurrent = (name: string): StoredState | undefined => reading.get(name);

/**
 * All policy states of one key, in memory, with the operations every in-process store
 * needs (the MemoryStore keeps one per key; the Durable Object is one). Pure apart from
 * its own map: time is passed in, and every operation reports the changes to persist.
 */
export class KeyState {
  readonly states = new Map<string, StoredState>();

  constructor(initial?: Iterable<[string, StoredState]>) {
    if (initial) for (const [name, stored] of initial) this.states.set(name, stored);
  }

  check(policies: readonly Policy[], nowMs: number, input: DecideInput): DecideOutput {
    const output = decide(policies, this.reader(), nowMs, input);
    this.apply(output.changes);
    return output;
  }

  /** Consumes `cost` even past the limit, or returns −cost units, per policy if a list (see debit in debit.ts). */
  debit(policies: readonly Policy[], nowMs: number, cost: DebitCost, spentAtMs?: number): DecideOutput {
    const output = debit(policies, this.reader(), nowMs, cost, spentAtMs);
    this.apply(output.changes);
    return output;
  }

  reset(policies: readonly Policy[]): Map<string, StateChange> {
    const changes = new Map<string, StateChange>();
    for (const policy of policies) if (this.states.has(policy.name)) changes.set(policy.name, null);
    this.apply(changes);
    return changes;
  }

  /** Releases `leaseId` from every concurrency policy of the stack. */
  release(policies: readonly Policy[], leaseId: string, nowMs: number): { released: boolean; changes: Map<string, StateChange> } {
    let released = false;
    const changes = new Map<string, StateChange>();
    for (const policy of concurrencyPolicies(policies)) {
      const result = releaseLease(this.concurrencyState(policy), leaseId, nowMs);
      released ||= result.released;
      changes.set(policy.name, result.state.entries.length ? { stored: { algorithm: "concurrency", state: result.state }, freshAtMs: lastUntilMs(result.state.entries) } : null);
    }
    this.apply(changes);
    return { released, changes };
  }

  /**
   * Moves the expiry of `leaseId` to nowMs + leaseMs in every concurrency policy of the stack,
   * all-or-nothing: if one policy refuses (a reserved lease waits for a slot), none is extended.
   */
  extend(policies: readonly Policy[], leaseId: string, nowMs: number, leaseMs: number): { extended: boolean; changes: Map<string, StateChange> } {
    const results = concurrencyPolicies(policies).map((policy) => ({ policy, result: extendLease(this.concurrencyState(policy), leaseId, nowMs, leaseMs, policy.limit) }));
    const changes = new Map<string, StateChange>();
    if (results.some(({ result }) => result.refused)) return { extended: false, changes };
    let extended = false;
    for (const { policy, result } of results) {
      extended ||= result.extended;
      if (result.extended) changes.set(policy.name, { stored: { algorithm: "concurrency", state: result.state }, freshAtMs: lastUntilMs(result.state.entries) });
    }
    this.apply(changes);
    return { extended, changes };
  }

  /**
   * Raises or sets the balance of a credits policy (POST /v1/credits); answers what a decision
   * would report as `remaining` after it. A balance equal to a fresh one is dropped; an `add` of
   * 0 is a read and writes nothing (the policy it was given may not be the one the key is
   * spent under: only a change judges the state against it); a change that would take the
   * balance past MAX_BALANCE is refused (`refused`), nothing changed.
   */
  credits(policy: Policy, nowMs: number, change: CreditsChange): CreditsOutcome & { changes: Map<string, StateChange> } {
    if (policy.algorithm !== "credits") throw new TypeError(`policy "${policy.name}" is ${policy.algorithm}, not credits`);
    const stored = this.states.get(policy.name);
    const live = liveState(stored, policy, nowMs) as CreditsState | undefined;
    const state = changeCredits(live, policy, nowMs, change);
    const refused = pastBalanceCap(credits.standing(live, policy, nowMs).remaining, state);
    if (refused !== undefined) return { remaining: floorCount(credits.standing(live, policy, nowMs).remaining), refused, changes: new Map() };
    if ("add" in change && change.add === 0) return { remaining: floorCount(credits.standing(state, policy, nowMs).remaining), changes: new Map() };
    const written = stateChange(policy, state, liveBlockMs(stored, policy, nowMs))!;
    const changes = new Map<string, StateChange>([[policy.name, written.freshAtMs <= nowMs ? null : written]]);
    this.apply(changes);
    return { remaining: floorCount(credits.standing(state, policy, nowMs).remaining), changes };
  }

  /** The latest time any state becomes fresh; undefined when nothing is held. */
  lastFreshAtMs(freshAt: (name: string, stored: StoredState) => number): number | undefined {
    let last: number | undefined;
    for (const [name, stored] of this.states) last = Math.max(last ?? 0, freshAt(name, stored));
    return last;
  }

  /**
   * The states' reader for one synchronous decide or debit: one function for every KeyState
   * (no closure per key, nor per call), pointed at this one's states until the next call.
   * decide and debit read only while they run, and never start another KeyState's decision.
   */
  private reader(): (name: string) => StoredState | undefined {
    reading = this.states;
    return readCurrent;
  }

  private concurrencyState(policy: Policy): ConcurrencyState | undefined {
    const stored = this.states.get(policy.name);
    return stored?.algorithm === "concurrency" ? stored.state : undefined;
  }

  private apply(changes: Map<string, StateChange>): void {
    changes.forEach((change, name) => {
      if (change) this.states.set(name, change.stored);
      else this.states.delete(name);
    });
  }
}
