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
 * One (policy, source)'s overrides. Exact keys are one Map lookup; wildcards are found by
 * trying each distinct prefix length present, longest first (one lookup per length, not per
 * wildcard), so a lookup costs the same with 10 or 100,000 overrides. Runtime overrides are
 * laid over the config's: one of the same key replaces it, and deleting it brings it back.
 */
class PolicyOverrides {
  readonly exact = new Map<string, Entry>();
  readonly prefixes = new Map<string, Entry>();
  /** Distinct wildcard prefix lengths, longest first. */
  lengths: number[] = [];
  /** How many wildcards have each prefix length (a length goes when its last wildcard does). */
  readonly #perLength = new Map<number, number>();
  /** The config's entries, by the key they were written with: what a deleted runtime override gives back. */
  readonly #configured = new Map<string, Entry>();
  /** Keys with a runtime override, for a policy read whole again. */
  readonly runtimeKeys = new Set<string>();

  add(override: Override, runtime: boolean): void {
    const entry = new Entry(override);
    if (runtime) this.runtimeKeys.add(override.key);
    else this.#configured.set(override.key, entry);
    this.#set(override.key, entry);
  }

  /** Takes a runtime override away: the config's of the same key applies again, if there is one. */
  remove(key: string): void {
    if (!this.runtimeKeys.delete(key)) return;
    const configured = this.#configured.get(key);
    if (configured) this.#set(key, configured);
    else if (!key.endsWith("*")) this.exact.delete(key);
    else {
      const prefix = key.slice(0, -1);
      this.prefixes.delete(prefix);
      const left = this.#perLength.get(prefix.length)! - 1;
      if (left > 0) this.#perLength.set(prefix.length, left);
      else {
        this.#perLength.delete(prefix.length);
        this.lengths = this.lengths.filter((length) => length !== prefix.length);
      }
    }
  }

  #set(key: string, entry: Entry): void {
    if (!key.endsWith("*")) return void this.exact.set(key, entry);
    const prefix = key.slice(0, -1);
    if (!this.prefixes.has(prefix)) {
      const count = this.#perLength.get(prefix.length) ?? 0;
      this.#perLength.set(prefix.length, count + 1);
      if (count === 0) this.lengths = [...this.lengths, prefix.length].sort((a, b) => b - a);
    }
    this.prefixes.set(prefix, entry);
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
 * Where an index keeps a (policy, source)'s overrides: the policy's name for overrides without
 * a source (the /v1 and middleware path pays nothing for sources), else the name, NUL and the
 * source (a policy name never holds NUL).
 */
const slotOf = (policy: string, source: string | undefined) => (source === undefined ? policy : `${policy}\u0000${source}`);

/**
 * Every override in force, by policy and source: what the engine consults between a request's
 * key and the store. Changed in place as runtime overrides change (put, remove, a policy read
 * whole again): every lookup is synchronous, so a request still reads one consistent table.
 */
export class OverrideIndex {
  readonly #bySlot = new Map<string, PolicyOverrides>();
  /** Each policy's slots (one per source it has overrides for). */
  readonly #slotsOf = new Map<string, Set<string>>();
  /** Resolved stacks of more than one policy, by their members' entries (bounded, see resolve). */
  readonly #stacks = new Map<string, Policy[]>();
  #ids = new WeakMap<Entry, number>();
  #nextId = 0;

  /** The config's overrides (later ones of the same (policy, source, key) replace earlier ones). */
  constructor(configured: Iterable<Override> = []) {
    for (const override of configured) this.#slot(override.policy, override.source).add(override, false);
  }

  #slot(policy: string, source: string | undefined): PolicyOverrides {
    const slot = slotOf(policy, source);
    let table = this.#bySlot.get(slot);
    if (!table) {
      this.#bySlot.set(slot, (table = new PolicyOverrides()));
      let slots = this.#slotsOf.get(policy);
      if (!slots) this.#slotsOf.set(policy, (slots = new Set()));
      slots.add(slot);
    }
    return table;
  }

  get empty(): boolean {
    return this.#bySlot.size === 0;
  }

  /** Adds or replaces a runtime override. */
  put(override: Override): void {
    this.#slot(override.policy, override.source).add(override, true);
  }

  /** Takes a runtime override away (the config's of the same key, if any, applies again). */
  remove(policy: string, source: string | undefined, key: string): void {
    this.#bySlot.get(slotOf(policy, source))?.remove(key);
  }

  /** A policy's runtime overrides replaced by `overrides` (the policy read whole). */
  replace(policy: string, overrides: Iterable<Override>): void {
    for (const slot of this.#slotsOf.get(policy) ?? []) {
      const table = this.#bySlot.get(slot)!;
      for (const key of [...table.runtimeKeys]) table.remove(key);
    }
    for (const override of overrides) this.put(override);
  }

  /** The override in force for (policy, key) from `source` (undefined: keys given to /v1), if any. */
  find(policy: string, key: string, nowMs = Date.now(), source?: string): Override | undefined {
    return this.#bySlot.get(slotOf(policy, source))?.find(key, nowMs)?.override;
  }

  /**
   * `policies` with each one's override for `key` applied: the same array when none applies
   * (the usual request pays a Map lookup per policy), else the same resolved array for the
   * same overrides, so stores keep their per-stack caches.
   */
  resolve(policies: readonly Policy[], key: string, nowMs: number, source?: string): readonly Policy[] {
    if (policies.length === 1) {
      const entry = this.#bySlot.get(slotOf(policies[0]!.name, source))?.find(key, nowMs);
      return entry ? entry.stackFor(policies[0]!) : policies;
    }
    let entries: (Entry | undefined)[] | undefined;
    for (let i = 0; i < policies.length; i++) {
      const entry = this.#bySlot.get(slotOf(policies[i]!.name, source))?.find(key, nowMs);
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
