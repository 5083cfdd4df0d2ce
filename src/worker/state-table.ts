import type { StoredState } from "../core/algorithms.js";
import type { StateChange } from "../core/decision.js";

/** The part of a Durable Object's storage a key uses (a probe can wrap it to count). */
export interface KeyStorage {
  readonly kv: Pick<SyncKvStorage, "get" | "put" | "delete">;
  readonly sql: Pick<SqlStorage, "exec">;
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTimeMs: number): Promise<void>;
  deleteAll(): Promise<void>;
}

/** The key's one row: every policy state with the time it becomes fresh, by policy name. */
type Row = Record<string, [stored: StoredState, freshAtMs: number]>;

/** The row's key in the object's key-value table. */
export const STATE_ROW = "state";
/** The layout before one row per key: a SQL table with one row per policy state. */
const LEGACY_TABLE = "state";

/**
 * A key's persisted state: ONE row whatever the stack (docs/worker.md, "What it costs"),
 * so a decision on a stack of three writes what a decision on one policy writes. The row
 * lives in the object's synchronous key-value table (`ctx.storage.kv`, a WITHOUT ROWID
 * SQLite table): a fresh key's first write is one row, with no table to create (a SQL
 * CREATE TABLE writes two rows of schema of its own) and no primary-key index beside it.
 *
 * Each state keeps the time it becomes fresh, so the alarm can tell what is still live
 * without knowing the policies.
 */
export class StateTable {
  private readonly storage: KeyStorage;
  private readonly freshAtMs = new Map<string, number>();

  constructor(storage: KeyStorage) {
    this.storage = storage;
  }

  /** The key's states: from its row, or from the legacy table (moved into the row once). */
  load(): [string, StoredState][] {
    const row = this.storage.kv.get<Row>(STATE_ROW);
    if (row) return this.remember(Object.entries(row));
    const legacy = this.loadLegacy();
    if (legacy.length > 0) this.writeRow(new Map(legacy.map(([name, stored]) => [name, stored])));
    return legacy;
  }

  /**
   * Set by load(): the object holds the earlier layout's table with nothing in it (that layout
   * made the table in every object it opened, a peek's too, and left it with no alarm to drop
   * it). Its owner drops the whole database: nothing in it matters.
   */
  emptyLegacy = false;

  /** Writes the row after `changes` (already applied to `states`): one row, or none when nothing changed. */
  write(changes: Map<string, StateChange>, states: ReadonlyMap<string, StoredState>): void {
    if (changes.size === 0) return;
    for (const [name, change] of changes) {
      if (change) this.freshAtMs.set(name, change.freshAtMs);
      else this.freshAtMs.delete(name);
    }
    this.writeRow(states);
  }

  /** The latest time a state becomes fresh; undefined when nothing is held. */
  lastFreshAtMs(): number | undefined {
    let last: number | undefined;
    for (const atMs of this.freshAtMs.values()) last = Math.max(last ?? 0, atMs);
    return last;
  }

  /** The states fresh at nowMs (forgotten here; the caller drops them and rewrites the row). */
  takeFresh(nowMs: number): string[] {
    const fresh: string[] = [];
    for (const [name, atMs] of this.freshAtMs) if (atMs <= nowMs) fresh.push(name);
    for (const name of fresh) this.freshAtMs.delete(name);
    return fresh;
  }

  /** Writes the row as `states` hold it (after takeFresh). */
  rewrite(states: ReadonlyMap<string, StoredState>): void {
    this.writeRow(states);
  }

  /** After deleteAll(): nothing is held. */
  clear(): void {
    this.freshAtMs.clear();
  }

  private writeRow(states: ReadonlyMap<string, StoredState>): void {
    if (this.freshAtMs.size === 0) {
      // Everything was reset or released: one delete, and the alarm drops the database.
      this.storage.kv.delete(STATE_ROW);
      return;
    }
    const row: Row = {};
    for (const [name, atMs] of this.freshAtMs) {
      const stored = states.get(name);
      if (stored) row[name] = [stored, atMs];
    }
    this.storage.kv.put(STATE_ROW, row);
  }

  private remember(entries: [string, [StoredState, number]][]): [string, StoredState][] {
    return entries.map(([name, [stored, atMs]]) => {
      this.freshAtMs.set(name, atMs);
      return [name, stored];
    });
  }

  /**
   * An object written before the one-row layout holds a table `state` with one row per policy.
   * Its states are read once, moved into the row, and the table dropped: counts survive the
   * upgrade. Only an object with no row asks (a row read of the schema, never a write).
   */
  private loadLegacy(): [string, StoredState][] {
    const sql = this.storage.sql;
    const exists = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", LEGACY_TABLE).toArray().length > 0;
    if (!exists) return [];
    const rows = sql.exec<{ policy: string; body: string; fresh_at_ms: number }>(`SELECT policy, body, fresh_at_ms FROM ${LEGACY_TABLE}`).toArray();
    if (rows.length === 0) {
      this.emptyLegacy = true;
      return [];
    }
    sql.exec(`DROP TABLE ${LEGACY_TABLE}`);
    return this.remember(rows.map((row) => [row.policy, [JSON.parse(row.body) as StoredState, row.fresh_at_ms]]));
  }
}
