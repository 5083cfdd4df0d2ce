import type { StoredState } from "../core/algorithms.js";
import type { StateChange } from "../core/decision.js";

/**
 * The Durable Object's SQLite table: one row per policy state of this key, with the time
 * it becomes fresh so the alarm can delete it without knowing the policy.
 */
export class StateTable {
  private readonly sql: SqlStorage;
  private schemaReady = false;

  constructor(sql: SqlStorage) {
    this.sql = sql;
  }

  load(): [string, StoredState][] {
    this.ensureSchema();
    const rows = this.sql.exec<{ policy: string; body: string }>("SELECT policy, body FROM state").toArray();
    return rows.map((row) => [row.policy, JSON.parse(row.body) as StoredState]);
  }

  write(changes: Map<string, StateChange>): void {
    this.ensureSchema();
    for (const [policy, change] of changes) {
      if (change) {
        this.sql.exec(
          "INSERT INTO state (policy, body, fresh_at_ms) VALUES (?, ?, ?) ON CONFLICT(policy) DO UPDATE SET body = excluded.body, fresh_at_ms = excluded.fresh_at_ms",
          policy,
          JSON.stringify(change.stored),
          change.freshAtMs,
        );
      } else {
        this.sql.exec("DELETE FROM state WHERE policy = ?", policy);
      }
    }
  }

  /** Deletes the states that are fresh at nowMs; returns their policy names. */
  deleteFresh(nowMs: number): string[] {
    this.ensureSchema();
    const rows = this.sql.exec<{ policy: string }>("DELETE FROM state WHERE fresh_at_ms <= ? RETURNING policy", nowMs).toArray();
    return rows.map((row) => row.policy);
  }

  lastFreshAtMs(): number | undefined {
    this.ensureSchema();
    const row = this.sql.exec<{ last: number | null }>("SELECT MAX(fresh_at_ms) AS last FROM state").one();
    return row.last ?? undefined;
  }

  /** After deleteAll() the table is gone; it is re-created on the next write. */
  forgetSchema(): void {
    this.schemaReady = false;
  }

  private ensureSchema(): void {
    if (this.schemaReady) return;
    this.sql.exec("CREATE TABLE IF NOT EXISTS state (policy TEXT PRIMARY KEY, body TEXT NOT NULL, fresh_at_ms REAL NOT NULL)");
    this.schemaReady = true;
  }
}
