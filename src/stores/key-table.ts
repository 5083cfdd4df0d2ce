import type { Policy } from "../core/types.js";
import type { LocalKey } from "./local-key.js";
import type { NoticeClaim } from "./notice-claims.js";

/** One key of the MemoryStore, linked into the recency order. */
export interface KeyEntry {
  readonly key: string;
  readonly local: LocalKey;
  /**
   * The policies this key was used with, by name: what its states mean. Each is one (key,
   * policy) state of the table's count: change it through KeyTable (remember, forget).
   */
  readonly policies: KeyPolicies;
  /** Notices claimed for this key (config `notify`, notice-claims.ts): they go with its state. */
  notices: NoticeClaim[] | undefined;
  older: KeyEntry | undefined;
  newer: KeyEntry | undefined;
}

/** Past this many policies a key's list becomes a Map (a rate limit service domain may hold hundreds). */
const LISTED_POLICIES = 8;

/**
 * A key's policies by name, read like a Map. Most keys have one or two: a short array holds
 * them in a fraction of a Map's room (a Map's table is most of an idle key's bytes:
 * BENCHMARKS.md, "Memory store: bytes per key"); past LISTED_POLICIES it is a Map after all.
 */
export class KeyPolicies {
  private list: Policy[] | undefined = [];
  private byName: Map<string, Policy> | undefined;

  get size(): number {
    return this.list ? this.list.length : this.byName!.size;
  }

  get(name: string): Policy | undefined {
    if (!this.list) return this.byName!.get(name);
    for (const policy of this.list) if (policy.name === name) return policy;
    return undefined;
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  /** Sets `policy` under its name; true when the name is new. */
  set(policy: Policy): boolean {
    const list = this.list;
    if (!list) {
      const added = !this.byName!.has(policy.name);
      this.byName!.set(policy.name, policy);
      return added;
    }
    for (let i = 0; i < list.length; i++) {
      if (list[i]!.name !== policy.name) continue;
      list[i] = policy;
      return false;
    }
    // A new array of the exact size (a push would leave room for 16 more on every key).
    if (list.length < LISTED_POLICIES) this.list = list.length === 0 ? [policy] : list.concat(policy);
    else {
      this.byName = new Map(list.map((one) => [one.name, one]));
      this.byName.set(policy.name, policy);
      this.list = undefined;
    }
    return true;
  }

  /** Removes the policy of `name`; true when there was one. */
  delete(name: string): boolean {
    if (!this.list) return this.byName!.delete(name);
    const kept = this.list.filter((policy) => policy.name !== name);
    if (kept.length === this.list.length) return false;
    this.list = kept;
    return true;
  }

  /** [name, policy] pairs, in the order first remembered. */
  *[Symbol.iterator](): Generator<[string, Policy]> {
    // Lists are replaced, never changed in place: a delete while iterating leaves this one whole.
    if (this.list) for (const policy of this.list) yield [policy.name, policy];
    else yield* [...this.byName!];
  }
}

/**
 * The MemoryStore's keys: a Map for lookup plus a doubly linked list from least to most
 * recently used. The list, not the Map's own order, gives the oldest key: V8 leaves a hole
 * for every deleted Map entry until it rehashes, and iteration walks over the holes, so
 * evicting from the front of a Map costs more with every eviction. Every operation here
 * is O(1) (remember: O(policies)).
 *
 * It also counts the (key, policy) states it holds: a key's memory grows with the policies it
 * is used with (inline policies of /v1/check have any name), so the store's bound is on states.
 */
export class KeyTable {
  private readonly byKey = new Map<string, KeyEntry>();
  private oldest: KeyEntry | undefined;
  private newest: KeyEntry | undefined;
  private stateCount = 0;

  /** Keys held. */
  get size(): number {
    return this.byKey.size;
  }

  /** (key, policy) states held: the policies remembered over every key. */
  get states(): number {
    return this.stateCount;
  }

  /** Remembers what each policy of a stack means for this key (a policy as it is now wins). */
  remember(entry: KeyEntry, policies: readonly Policy[]): void {
    for (const policy of policies) if (entry.policies.set(policy)) this.stateCount++;
  }

  /** Forgets one state of a key (the caller drops the state itself). */
  forget(entry: KeyEntry, policyName: string): void {
    if (entry.policies.delete(policyName)) this.stateCount--;
  }

  get(key: string): KeyEntry | undefined {
    return this.byKey.get(key);
  }

  /** Adds a key as the most recently used. */
  add(key: string, local: LocalKey): KeyEntry {
    const entry: KeyEntry = { key, local, policies: new KeyPolicies(), notices: undefined, older: undefined, newer: undefined };
    this.byKey.set(key, entry);
    this.link(entry);
    return entry;
  }

  /** Marks a key as just used. */
  touch(entry: KeyEntry): void {
    if (entry === this.newest) return;
    this.unlink(entry);
    this.link(entry);
  }

  delete(entry: KeyEntry): void {
    if (this.byKey.get(entry.key) !== entry) return;
    this.byKey.delete(entry.key);
    this.stateCount -= entry.policies.size;
    this.unlink(entry);
  }

  clear(): void {
    this.byKey.clear();
    this.stateCount = 0;
    this.oldest = this.newest = undefined;
  }

  /**
   * Least recently used first. The entry yielded may be deleted or touched before the next
   * one is asked for (a touched one comes round again at the end).
   */
  *fromOldest(): Generator<KeyEntry> {
    let entry = this.oldest;
    while (entry) {
      const next = entry.newer;
      yield entry;
      entry = next;
    }
  }

  private link(entry: KeyEntry): void {
    entry.older = this.newest;
    entry.newer = undefined;
    if (this.newest) this.newest.newer = entry;
    else this.oldest = entry;
    this.newest = entry;
  }

  private unlink(entry: KeyEntry): void {
    if (entry.older) entry.older.newer = entry.newer;
    else this.oldest = entry.newer;
    if (entry.newer) entry.newer.older = entry.older;
    else this.newest = entry.older;
    entry.older = entry.newer = undefined;
  }
}
