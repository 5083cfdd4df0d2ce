// The memory store's keys, bounded: at most maxKeys (key, policy) states, room made for a new one by evicting a key or a state.
import type { Policy } from "../core/types.js";
import { StoreFaultError } from "../core/limiter.js";
import { type KeyEntry, KeyTable } from "./key-table.js";
import { LocalKey, NOTHING_TO_PERSIST } from "./local-key.js";

/** How many of the least recently used evictable keys are searched for a fresh one: bounded work per new key. */
const FRESH_SEARCH = 8;

/**
 * After a walk found every key pinned, new keys are refused for this long without another
 * walk (a release or reset ends it sooner): a flood of new keys costs no walk each.
 */
const PINNED_RECHECK_MS = 100;

/** The most policies a stack holds (resolvePolicies): a key with more states is fed inline names. */
const MAX_STACK_POLICIES = 16;

/**
 * The keys of a MemoryStore in recency order (KeyTable), held to `maxKeys` (key, policy)
 * states: a new state beyond it evicts the least recently used key, or one of the few after
 * it that is already fresh; when no other key can go, states of the same key that the request
 * does not use go instead. A key with a live lease or a waiter is never evicted; when nothing
 * else can go, the request is refused with StoreFaultError (fullError), which never admits.
 */
export class BoundedKeys {
  readonly maxKeys: number;
  private readonly keys = new KeyTable();
  private readonly clockMs: () => number;
  /** States evicted to stay within maxKeys (swept fresh keys are not counted). */
  evicted = 0;
  /** Until when new keys are refused without a look, after one found every key pinned. */
  private pinnedUntilMs = 0;

  constructor(maxKeys: number, clockMs: () => number) {
    this.maxKeys = maxKeys;
    this.clockMs = clockMs;
  }

  get(key: string): KeyEntry | undefined {
    return this.keys.get(key);
  }

  /** Every key, the least recently used first. */
  fromOldest(): Generator<KeyEntry> {
    return this.keys.fromOldest();
  }

  /** Number of keys held. */
  get size(): number {
    return this.keys.size;
  }

  /** Number of (key, policy) states held: what maxKeys bounds. */
  get states(): number {
    return this.keys.states;
  }

  clear(): void {
    this.keys.clear();
  }

  /** A lease or a waiter may have gone (a release, a reset, a sweep): the next new key looks again. */
  unpinned(): void {
    this.pinnedUntilMs = 0;
  }

  /** The key's LocalKey, made (room made for it first) when the key is new. */
  entry(key: string, policies: readonly Policy[]): LocalKey {
    const found = this.keys.get(key);
    if (found) return this.use(found, policies);
    this.makeRoom(newStates(undefined, policies), undefined, policies);
    const entry = this.keys.add(key, new LocalKey([], NOTHING_TO_PERSIST, this.clockMs));
    this.keys.remember(entry, policies);
    return entry.local;
  }

  /** A key held already, used with `policies` now: the most recently used, room made for its new states. */
  use(found: KeyEntry, policies: readonly Policy[]): LocalKey {
    this.keys.touch(found);
    const needed = newStates(found, policies);
    if (needed > 0) this.makeRoom(needed, found, policies);
    this.keys.remember(found, policies);
    return found.local;
  }

  /** Drops keys whose every state is fresh again and nobody waits on. */
  sweep(): void {
    const nowMs = this.clockMs();
    for (const entry of this.keys.fromOldest()) {
      if (entry.local.waiting > 0) continue;
      const freshAtMs = freshAt(entry);
      if (freshAtMs === undefined || freshAtMs <= nowMs) this.keys.delete(entry);
      // A live key sheds its fresh states (the rate limit service keeps a domain's counters under one key).
      else for (const name of entry.local.dropFreshStates((policyName) => entry.policies.get(policyName), nowMs)) this.keys.forget(entry, name);
    }
    this.pinnedUntilMs = 0;
  }

  /** Frees room for `needed` new states of `current` (a key held already, or none yet) and its stack. */
  private makeRoom(needed: number, current: KeyEntry | undefined, stack: readonly Policy[]): void {
    if (needed > this.maxKeys) throw new StoreFaultError(`the memory store holds at most ${this.maxKeys} (key, policy) states, and this request needs ${needed} new ones; raise maxKeys (--memory-max-keys)`);
    // A key used with more policies than any one stack holds is being fed ever new (inline)
    // names: it pays with its own states first, so it cannot push every other key out.
    const ownFirst = current !== undefined && current.policies.size >= MAX_STACK_POLICIES;
    while (this.keys.states + needed > this.maxKeys) {
      if (ownFirst && this.evictStateOf(current, stack)) continue;
      if (this.evictKey(current)) continue;
      if (current && this.evictStateOf(current, stack)) continue;
      throw this.fullError();
    }
  }

  /**
   * Evicts one key, walking from the least recently used: the first fresh key among the
   * first FRESH_SEARCH evictable ones, else the first evictable one. Not "fresh soonest":
   * a key that keeps being denied keeps its old state, and is exactly the one to keep.
   * Pinned keys met on the way move to the end (they are in use), so the next walk does
   * not meet them again.
   */
  private evictKey(current: KeyEntry | undefined): boolean {
    const nowMs = this.clockMs();
    if (nowMs < this.pinnedUntilMs) return false;
    let victim: KeyEntry | undefined;
    let searched = 0;
    // Pinned keys moved to the end are met again at the end of the walk: stop before.
    let left = this.keys.size;
    for (const entry of this.keys.fromOldest()) {
      if (left-- === 0) break;
      if (entry === current) continue;
      if (isPinned(entry, nowMs)) {
        this.keys.touch(entry);
        continue;
      }
      victim ??= entry;
      if ((freshAt(entry) ?? nowMs) <= nowMs) {
        victim = entry;
        break;
      }
      if (++searched >= FRESH_SEARCH) break;
    }
    if (victim === undefined) {
      this.pinnedUntilMs = nowMs + PINNED_RECHECK_MS;
      return false;
    }
    this.evicted += victim.policies.size;
    this.keys.delete(victim);
    return true;
  }

  /**
   * Evicts one state of `current` that its request does not use and that holds no lease and
   * no waiter (the oldest remembered first): a key used with ever new policy names pays for
   * them with its own states once no other key can go.
   */
  private evictStateOf(current: KeyEntry, stack: readonly Policy[]): boolean {
    const nowMs = this.clockMs();
    const queued = current.local.waiting > 0 ? current.local.queue.queuedPolicyNames() : undefined;
    for (const [name, policy] of current.policies) {
      if (queued?.has(name) || stack.some((used) => used.name === name)) continue;
      const stored = current.local.state.states.get(name);
      if (stored?.algorithm === "concurrency" && stored.state.entries.some(([untilMs]) => untilMs > nowMs)) continue;
      current.local.reset([policy]);
      this.keys.forget(current, name);
      this.evicted++;
      return true;
    }
    return false;
  }

  private fullError(): StoreFaultError {
    return new StoreFaultError(`the memory store is full: all ${this.maxKeys} (key, policy) states belong to keys that hold leases or waiters, so a new one cannot be tracked; raise maxKeys (--memory-max-keys)`);
  }
}

/** How many states of `stack` the key does not hold yet (every one for a new key). */
function newStates(entry: KeyEntry | undefined, stack: readonly Policy[]): number {
  let count = 0;
  for (let i = 0; i < stack.length; i++) {
    const name = stack[i]!.name;
    if (entry?.policies.has(name)) continue;
    // Stacks name a policy once (resolvePolicies), but a direct caller may not: count names, not items.
    let repeated = false;
    for (let j = 0; j < i; j++) if (stack[j]!.name === name) repeated = true;
    if (!repeated) count++;
  }
  return count;
}

/** When every state of a key is fresh again (undefined: nothing held). */
function freshAt({ local, policies }: KeyEntry): number | undefined {
  return local.lastFreshAtMs((name) => policies.get(name));
}

/** A key that must not be evicted: somebody waits on it, or it holds a live lease. */
function isPinned({ local }: KeyEntry, nowMs: number): boolean {
  if (local.waiting > 0) return true;
  for (const stored of local.state.states.values()) {
    if (stored.algorithm === "concurrency" && stored.state.entries.some(([untilMs]) => untilMs > nowMs)) return true;
  }
  return false;
}
