import type { Policy } from "../core/types.js";
import type { LocalKey } from "./local-key.js";

/** One key of the MemoryStore, linked into the recency order. */
export interface KeyEntry {
  readonly key: string;
  readonly local: LocalKey;
  /** The policies this key was used with, by name: what its states mean. */
  readonly policies: Map<string, Policy>;
  older: KeyEntry | undefined;
  newer: KeyEntry | undefined;
}

/**
 * The MemoryStore's keys: a Map for lookup plus a doubly linked list from least to most
 * recently used. The list, not the Map's own order, gives the oldest key: V8 leaves a hole
 * for every deleted Map entry until it rehashes, and iteration walks over the holes, so
 * evicting from the front of a Map costs more with every eviction. Every operation here
 * is O(1).
 */
export class KeyTable {
  private readonly byKey = new Map<string, KeyEntry>();
  private oldest: KeyEntry | undefined;
  private newest: KeyEntry | undefined;

  get size(): number {
    return this.byKey.size;
  }

  get(key: string): KeyEntry | undefined {
    return this.byKey.get(key);
  }

  /** Adds a key as the most recently used. */
  add(key: string, local: LocalKey): KeyEntry {
    const entry: KeyEntry = { key, local, policies: new Map(), older: undefined, newer: undefined };
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
    this.unlink(entry);
  }

  clear(): void {
    this.byKey.clear();
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
