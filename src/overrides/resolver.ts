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

/** A node of the wildcard trie: the wildcard whose prefix ends here, if any, and the nodes one character on. */
class PrefixNode {
  entry: Entry | undefined;
  /** By the next character's UTF-16 code unit: a number key hashes without reading a string. */
  next: Map<number, PrefixNode> | undefined;
}

/**
 * One (policy, source)'s overrides. Exact keys are one Map lookup; wildcards sit in a trie of
 * their prefixes, walked one character of the key at a time: a lookup reads each character of
 * the key at most once, whatever the number of overrides (10 or 100,000) and their prefixes'
 * lengths. Runtime overrides are laid over the config's: one of the same key replaces it, and
 * deleting it brings it back.
 */
class PolicyOverrides {
  readonly exact = new Map<string, Entry>();
  readonly #root = new PrefixNode();
  /** How many wildcards the trie holds: none, and a lookup is the exact one alone. */
  #wildcards = 0;
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
    else this.#unsetPrefix(key.slice(0, -1));
  }

  #set(key: string, entry: Entry): void {
    if (!key.endsWith("*")) return void this.exact.set(key, entry);
    const prefix = key.slice(0, -1);
    let node = this.#root;
    for (let i = 0; i < prefix.length; i++) {
      const code = prefix.charCodeAt(i);
      const next = (node.next ??= new Map());
      let child = next.get(code);
      if (!child) next.set(code, (child = new PrefixNode()));
      node = child;
    }
    if (!node.entry) this.#wildcards++;
    node.entry = entry;
  }

  /** Takes a wildcard's prefix out of the trie, and the nodes that then lead to no wildcard. */
  #unsetPrefix(prefix: string): void {
    const path = [this.#root];
    for (let i = 0; i < prefix.length; i++) {
      const child = path[i]!.next?.get(prefix.charCodeAt(i));
      if (!child) return;
      path.push(child);
    }
    const node = path[prefix.length]!;
    if (!node.entry) return;
    node.entry = undefined;
    this.#wildcards--;
    for (let i = prefix.length; i > 0 && !path[i]!.entry && !path[i]!.next?.size; i--) {
      const parent = path[i - 1]!;
      parent.next!.delete(prefix.charCodeAt(i - 1));
      if (parent.next!.size === 0) parent.next = undefined;
    }
  }

  /** Exact beats every wildcard; among wildcards the longest prefix wins (an expired one is passed over). */
  find(key: string, nowMs: number): Entry | undefined {
    const exact = this.exact.get(key);
    if (exact && live(exact, nowMs)) return exact;
    if (this.#wildcards === 0) return undefined;
    let found: Entry | undefined;
    let node: PrefixNode | undefined = this.#root;
    for (let i = 0; ; i++) {
      const entry = node.entry;
      if (entry && live(entry, nowMs)) found = entry;
      if (i === key.length) return found;
      node = node.next?.get(key.charCodeAt(i));
      if (!node) return found;
    }
  }
}

const live = (entry: Entry, nowMs: number) => entry.override.expiresAtMs === undefined || entry.override.expiresAtMs > nowMs;

/**
 * Every override in force, by policy and source: what the engine consults between a request's
 * key and the store. Changed in place as runtime overrides change (put, remove, a policy read
 * whole again): every lookup is synchronous, so a request still reads one consistent table.
 */
export class OverrideIndex {
  /**
   * By source (undefined: overrides for keys given to /v1 and rateLimit()), then policy: two
   * lookups of strings a request already holds, no key of the two built per request.
   */
  readonly #bySource = new Map<string | undefined, Map<string, PolicyOverrides>>();
  /** Each policy's sources (one table per source it has overrides for). */
  readonly #sourcesOf = new Map<string, Set<string | undefined>>();
  /** Resolved stacks of more than one policy, by their members' entries (bounded, see resolve). */
  readonly #stacks = new Map<string, Policy[]>();
  #ids = new WeakMap<Entry, number>();
  #nextId = 0;

  /** The config's overrides (later ones of the same (policy, source, key) replace earlier ones). */
  constructor(configured: Iterable<Override> = []) {
    for (const override of configured) this.#tableFor(override.policy, override.source).add(override, false);
  }

  #tableFor(policy: string, source: string | undefined): PolicyOverrides {
    let policies = this.#bySource.get(source);
    if (!policies) this.#bySource.set(source, (policies = new Map()));
    let table = policies.get(policy);
    if (!table) {
      policies.set(policy, (table = new PolicyOverrides()));
      let sources = this.#sourcesOf.get(policy);
      if (!sources) this.#sourcesOf.set(policy, (sources = new Set()));
      sources.add(source);
    }
    return table;
  }

  #table(policy: string, source: string | undefined): PolicyOverrides | undefined {
    return this.#bySource.get(source)?.get(policy);
  }

  get empty(): boolean {
    return this.#bySource.size === 0;
  }

  /** Adds or replaces a runtime override. */
  put(override: Override): void {
    this.#tableFor(override.policy, override.source).add(override, true);
  }

  /** Takes a runtime override away (the config's of the same key, if any, applies again). */
  remove(policy: string, source: string | undefined, key: string): void {
    this.#table(policy, source)?.remove(key);
  }

  /** A policy's runtime overrides replaced by `overrides` (the policy read whole). */
  replace(policy: string, overrides: Iterable<Override>): void {
    for (const source of this.#sourcesOf.get(policy) ?? []) {
      const table = this.#table(policy, source)!;
      for (const key of [...table.runtimeKeys]) table.remove(key);
    }
    for (const override of overrides) this.put(override);
  }

  /** The override in force for (policy, key) from `source` (undefined: keys given to /v1), if any. */
  find(policy: string, key: string, nowMs = Date.now(), source?: string): Override | undefined {
    return this.#table(policy, source)?.find(key, nowMs)?.override;
  }

  /**
   * `policies` with each one's override for `key` applied: the same array when none applies
   * (the usual request pays a Map lookup per policy), else the same resolved array for the
   * same overrides, so stores keep their per-stack caches.
   */
  resolve(policies: readonly Policy[], key: string, nowMs: number, source?: string): readonly Policy[] {
    const bySource = this.#bySource.get(source);
    if (!bySource) return policies;
    if (policies.length === 1) {
      const entry = bySource.get(policies[0]!.name)?.find(key, nowMs);
      return entry ? entry.stackFor(policies[0]!) : policies;
    }
    let entries: (Entry | undefined)[] | undefined;
    for (let i = 0; i < policies.length; i++) {
      const entry = bySource.get(policies[i]!.name)?.find(key, nowMs);
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
