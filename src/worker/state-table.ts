import type { StoredState } from "../core/algorithms.js";
import type { StateChange } from "../core/decision.js";

/** The part of a Durable Object's storage a key uses (a probe can wrap it to count). */
export interface KeyStorage {
  readonly kv: Pick<SyncKvStorage, "get" | "list" | "put" | "delete">;
  readonly sql: Pick<SqlStorage, "exec">;
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTimeMs: number): Promise<void>;
  deleteAll(): Promise<void>;
}

/** One row: policy states with the time each becomes fresh, by policy name. */
type Row = Record<string, [stored: StoredState, freshAtMs: number]>;

/** The first row's key in the object's key-value table; further rows are `state:1`, `state:2`, … */
export const STATE_ROW = "state";
/**
 * States one row holds at most. A stack fits in one row (a key's first 64 policies share it),
 * and a key that holds many counters (a rate limit service domain decided together: one state
 * per counter) spreads over rows of 64, so a decision rewrites a bounded row, never all of them.
 */
export const STATES_PER_ROW = 64;
/** The layout before one row per key: a SQL table with one row per policy state. */
const LEGACY_TABLE = "state";

const rowKey = (row: number) => (row === 0 ? STATE_ROW : `${STATE_ROW}:${row}`);

/**
 * A key's persisted state: ONE row whatever the stack (docs/worker.md, "What it costs"), so a
 * decision on a stack of three writes what a decision on one policy writes. The row lives in
 * the object's synchronous key-value table (`ctx.storage.kv`, a WITHOUT ROWID SQLite table):
 * a fresh key's first write is one row, with no table to create (a SQL CREATE TABLE writes two
 * rows of schema of its own) and no primary-key index beside it.
 *
 * Each state keeps the time it becomes fresh, so the alarm can tell what is still live
 * without knowing the policies.
 */
export class StateTable {
  private readonly storage: KeyStorage;
  private readonly freshAtMs = new Map<string, number>();
  /** Which row holds each state, and each row's states (its index in `members`). */
  private readonly rowOf = new Map<string, number>();
  private readonly members: Set<string>[] = [];
  /** Rows whose states changed outside write() (takeFresh): rewrite() writes them. */
  private readonly dirty = new Set<number>();

  constructor(storage: KeyStorage) {
    this.storage = storage;
  }

  /**
   * Set by load(): the object holds the earlier layout's table with nothing in it (that layout
   * made the table in every object it opened, a peek's too, and left it with no alarm to drop
   * it). Its owner drops the whole database: nothing in it matters.
   */
  emptyLegacy = false;

  /** The key's states: from its rows, or from the legacy table (moved into rows once). */
  load(): [string, StoredState][] {
    const loaded: [string, StoredState][] = [];
    for (const [key, row] of this.storage.kv.list<Row>({ prefix: STATE_ROW })) {
      const index = key === STATE_ROW ? 0 : Number(key.slice(STATE_ROW.length + 1));
      if (!Number.isInteger(index) || index < 0) continue;
      for (const [name, [stored, atMs]] of Object.entries(row)) {
        this.place(name, index);
        this.freshAtMs.set(name, atMs);
        loaded.push([name, stored]);
      }
    }
    if (loaded.length > 0) return loaded;
    const legacy = this.loadLegacy();
    if (legacy.length > 0) {
      const states = new Map(legacy);
      for (const [name] of legacy) this.dirty.add(this.place(name));
      this.rewrite(states);
    }
    return legacy;
  }

  /** Writes the rows holding `changes` (already applied to `states`): one row for a stack, none when nothing changed. */
  write(changes: Map<string, StateChange>, states: ReadonlyMap<string, StoredState>): void {
    if (changes.size === 0) return;
    const touched = new Set<number>();
    for (const [name, change] of changes) {
      if (change) {
        this.freshAtMs.set(name, change.freshAtMs);
        touched.add(this.place(name));
      } else {
        const row = this.forget(name);
        if (row !== undefined) touched.add(row);
      }
    }
    for (const row of touched) this.writeRow(row, states);
  }

  /** The latest time a state becomes fresh; undefined when nothing is held. */
  lastFreshAtMs(): number | undefined {
    let last: number | undefined;
    for (const atMs of this.freshAtMs.values()) last = Math.max(last ?? 0, atMs);
    return last;
  }

  /** The states fresh at nowMs, forgotten here (the caller drops them, and rewrites or deletes all). */
  takeFresh(nowMs: number): string[] {
    const fresh: string[] = [];
    for (const [name, atMs] of this.freshAtMs) if (atMs <= nowMs) fresh.push(name);
    for (const name of fresh) {
      const row = this.forget(name);
      if (row !== undefined) this.dirty.add(row);
    }
    return fresh;
  }

  /** Writes the rows takeFresh changed, as `states` hold them. */
  rewrite(states: ReadonlyMap<string, StoredState>): void {
    for (const row of this.dirty) this.writeRow(row, states);
    this.dirty.clear();
  }

  /** After deleteAll(): nothing is held. */
  clear(): void {
    this.freshAtMs.clear();
    this.rowOf.clear();
    this.members.length = 0;
    this.dirty.clear();
  }

  /** The row of `name`, given one if it has none (the first with room, or `row` when loading). */
  private place(name: string, row?: number): number {
    const known = this.rowOf.get(name);
    if (known !== undefined) return known;
    let index = row ?? this.members.findIndex((names) => names.size < STATES_PER_ROW);
    if (index < 0) index = this.members.length;
    while (this.members.length <= index) this.members.push(new Set());
    this.members[index]!.add(name);
    this.rowOf.set(name, index);
    return index;
  }

  private forget(name: string): number | undefined {
    this.freshAtMs.delete(name);
    const row = this.rowOf.get(name);
    if (row === undefined) return undefined;
    this.rowOf.delete(name);
    this.members[row]!.delete(name);
    return row;
  }

  private writeRow(index: number, states: ReadonlyMap<string, StoredState>): void {
    const names = this.members[index];
    if (!names || names.size === 0) {
      // Everything in it was reset or released: one delete, and the alarm drops the database.
      this.storage.kv.delete(rowKey(index));
      return;
    }
    const row: Row = {};
    for (const name of names) {
      const stored = states.get(name);
      if (stored) row[name] = [stored, this.freshAtMs.get(name)!];
    }
    this.storage.kv.put(rowKey(index), row);
  }

  /**
   * An object written before the one-row layout holds a table `state` with one row per policy.
   * Its states are read once, moved into rows, and the table dropped: counts survive the
   * upgrade. Only an object with no row asks (a read of the schema, never a write).
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
    return rows.map((row) => {
      this.freshAtMs.set(row.policy, row.fresh_at_ms);
      return [row.policy, JSON.parse(row.body) as StoredState];
    });
  }
}
