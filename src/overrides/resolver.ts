import type { Policy } from "../core/types.js";
import { type Override, applyOverride } from "./parse.js";

/** One override in an index, with the policy it makes of the last base it was applied to. */
class Entry {
  readonly override: Override;
  #base: Policy | undefined;
  #resolved: Policy | undefined;
  #alone: readonly Policy[] | undefined;
  constructor(override: Override) {
    this.override = override;
  }
  /** The same object for the same base: stores cache their encoding of a policy by identity. */
  policyFor(base: Policy): Policy {
    if (this.#base !== base) {
      this.#base = base;
      this.#resolved = applyOverride(base, this.override);
      this.#alone = undefined;
    }
    return this.#resolved!;
  }
  /** A stack of that policy alone: one array, not one per request. */
  stackFor(base: Policy): readonly Policy[] {
    const policy = this.policyFor(base);
    return this.#alone ?? (this.#alone = [policy]);
  }
}

/**
 * One policy's overrides. Exact keys are one Map lookup; wildcards are found by trying each
 * distinct prefix length present, longest first (one lookup per length, not per wildcard), so
 * a lookup costs the same with 10 or 100,000 overrides.
 */
class PolicyOverrides {
  readonly exact = new Map<string, Entry>();
  readonly prefixes = new Map<string, Entry>();
  /** Distinct wildcard prefix lengths, longest first. */
  lengths: number[] = [];

  add(override: Override): void {
    const entry = new Entry(override);
    if (!override.key.endsWith("*")) return void this.exact.set(override.key, entry);
    const prefix = override.key.slice(0, -1);
    this.prefixes.set(prefix, entry);
    if (!this.lengths.includes(prefix.length)) this.lengths = [...this.lengths, prefix.length].sort((a, b) => b - a);
  }

  /** Exact beats every wildcard; among wildcards the longest prefix wins. */
  find(key: string, nowMs: number): Entry | undefined {
    const exact = this.exact.get(key);
    if (exact && live(exact, nowMs)) return exact;
    for (const length of this.lengths) {
      if (length > key.length) continue;
      const entry = this.prefixes.get(key.slice(0, length));
      if (entry && live(entry, nowMs)) return entry;
    }
    return undefined;
  }
}

const live = (entry: Entry, nowMs: number) => entry.override.expiresAtMs === undefined || entry.override.expiresAtMs > nowMs;

/**
 * Every override in force, by policy name: what the engine consults between a request's key
 * and the store. Immutable once built (a refresh builds a new one), so a request reads one
 * consistent table.
 */
export class OverrideIndex {
  readonly #byPolicy = new Map<string, PolicyOverrides>();
  /** Resolved stacks of more than one policy, by their members' entries (bounded, see resolve). */
  readonly #stacks = new Map<string, Policy[]>();
  #ids = new WeakMap<Entry, number>();
  #nextId = 0;

  /** Later overrides of the same (policy, key) replace earlier ones: runtime ones come after config ones. */
  constructor(overrides: Iterable<Override>) {
    for (const override of overrides) {
      let table = this.#byPolicy.get(override.policy);
      if (!table) this.#byPolicy.set(override.policy, (table = new PolicyOverrides()));
      table.add(override);
    }
  }

  get empty(): boolean {
    return this.#byPolicy.size === 0;
  }

  /** The override in force for (policy, key), if any. */
  find(policy: string, key: string, nowMs = Date.now()): Override | undefined {
    return this.#byPolicy.get(policy)?.find(key, nowMs)?.override;
  }

  /**
   * `policies` with each one's override for `key` applied: the same array when none applies
   * (the usual request pays a Map lookup per policy), else the same resolved array for the
   * same overrides, so stores keep their per-stack caches.
   */
  resolve(policies: readonly Policy[], key: string, nowMs: number): readonly Policy[] {
    if (policies.length === 1) {
      const entry = this.#byPolicy.get(policies[0]!.name)?.find(key, nowMs);
      return entry ? entry.stackFor(policies[0]!) : policies;
    }
    let entries: (Entry | undefined)[] | undefined;
    for (let i = 0; i < policies.length; i++) {
      const entry = this.#byPolicy.get(policies[i]!.name)?.find(key, nowMs);
      if (entry) (entries ??= new Array<Entry | undefined>(policies.length))[i] = entry;
    }
    if (!entries) return policies;
    const id = policies.map((policy, i) => (entries![i] ? `${this.#idOf(entries![i]!)}:${policy.name}` : policy.name)).join(",");
    let stack = this.#stacks.get(id);
    const wanted = policies.map((policy, i) => entries![i]?.policyFor(policy) ?? policy);
    if (!stack || stack.some((policy, i) => policy !== wanted[i])) {
      stack = wanted;
      // Bounded: a flood of distinct stacks costs a rebuild, never memory.
      if (this.#stacks.size >= 10_000) this.#stacks.clear();
      this.#stacks.set(id, stack);
    }
    return stack;
  }

  #idOf(entry: Entry): number {
    let id = this.#ids.get(entry);
    if (id === undefined) this.#ids.set(entry, (id = this.#nextId++));
    return id;
  }
}
