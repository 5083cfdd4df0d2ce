import { DurableObject } from "cloudflare:workers";
import type { Override } from "../overrides/parse.js";
import type { OverridesObjectRpc, StoredChanges, StoredPage } from "../stores/durable-object-overrides.js";

const SWEEP_EVERY_MS = 60_000;

/**
 * The Worker's runtime overrides (PUT /v1/overrides): one object, bound as OVERRIDES, holding
 * every policy's overrides in SQLite. Every row carries the version of its last change, and a
 * deleted row leaves a tombstone with the version of its deletion, so an isolate holding
 * version v reads only what changed after it (src/overrides/overrides.ts): a change costs
 * the isolates in proportion to the change. Tombstones beyond the latest `keep` are dropped
 * and `trimmed` remembers the last dropped version: an isolate further behind reads the
 * policy whole, in pages by key. Its single thread makes the 100,000-per-policy cap exact.
 *
 * `key` holds parse.ts overrideField (the key itself for an override without a source), so
 * rows written before sources and versions existed read as they did (their version is 0).
 */
export class OverridesObject extends DurableObject<Record<string, unknown>> implements OverridesObjectRpc {
  private readonly sql: SqlStorage;
  /** When each policy's expired rows were last dropped. */
  readonly #sweptAtMs = new Map<string, number>();

  constructor(ctx: DurableObjectState, env: Record<string, unknown>) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS overrides (policy TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (policy, key))");
    this.sql.exec("CREATE TABLE IF NOT EXISTS versions (policy TEXT PRIMARY KEY, version INTEGER NOT NULL)");
    this.sql.exec("CREATE TABLE IF NOT EXISTS tombstones (policy TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (policy, key))");
    // Objects created by an earlier release have neither column: added once, old rows at version 0.
    const columns = (table: string) => new Set(this.sql.exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`).toArray().map((row) => row.name));
    if (!columns("overrides").has("version")) this.sql.exec("ALTER TABLE overrides ADD COLUMN version INTEGER NOT NULL DEFAULT 0");
    if (!columns("versions").has("trimmed")) this.sql.exec("ALTER TABLE versions ADD COLUMN trimmed INTEGER NOT NULL DEFAULT 0");
    this.sql.exec("CREATE INDEX IF NOT EXISTS overrides_by_version ON overrides (policy, version)");
    this.sql.exec("CREATE INDEX IF NOT EXISTS tombstones_by_version ON tombstones (policy, version)");
  }

  versions(policies: string[]): number[] {
    const rows = this.sql.exec<{ policy: string; version: number }>("SELECT policy, version FROM versions").toArray();
    const byPolicy = new Map(rows.map((row) => [row.policy, row.version]));
    return policies.map((policy) => byPolicy.get(policy) ?? 0);
  }

  changes(policy: string, sinceVersion: number, most: number): StoredChanges | null {
    const { version, trimmed } = this.#version(policy);
    if (sinceVersion > version || sinceVersion < trimmed) return null;
    const put = this.sql.exec<{ body: string }>("SELECT body FROM overrides WHERE policy = ? AND version > ? LIMIT ?", policy, sinceVersion, most + 1).toArray();
    const deleted = this.sql.exec<{ key: string }>("SELECT key FROM tombstones WHERE policy = ? AND version > ? LIMIT ?", policy, sinceVersion, most + 1).toArray();
    if (put.length + deleted.length > most) return null;
    return { version, put: put.map((row) => row.body), deleted: deleted.map((row) => row.key) };
  }

  page(policy: string, cursor: string | null, count: number): StoredPage {
    const nowMs = Date.now();
    if (cursor === null && nowMs - (this.#sweptAtMs.get(policy) ?? 0) >= SWEEP_EVERY_MS) {
      // Expired overrides apply nowhere: dropped, so they do not count towards the cap. At most
      // once a minute: every isolate's first read walks the table, and this scans every row.
      this.#sweptAtMs.set(policy, nowMs);
      this.sql.exec("DELETE FROM overrides WHERE policy = ? AND json_extract(body, '$.expiresAtMs') <= ?", policy, nowMs);
    }
    const rows = this.sql.exec<{ key: string; body: string }>("SELECT key, body FROM overrides WHERE policy = ? AND key > ? ORDER BY key LIMIT ?", policy, cursor ?? "", count + 1).toArray();
    const more = rows.length > count;
    const page = more ? rows.slice(0, count) : rows;
    const stored: StoredPage = { bodies: page.map((row) => row.body), cursor: more ? page[page.length - 1]!.key : null };
    // A first page is the policy as of this version (one call, one thread): a reader needs no other.
    if (cursor === null) stored.version = this.#version(policy).version;
    return stored;
  }

  put(override: Override, field: string, maxPerPolicy: number, keep: number): boolean {
    const exists = this.sql.exec("SELECT 1 FROM overrides WHERE policy = ? AND key = ?", override.policy, field).toArray().length > 0;
    if (!exists) {
      const { count } = this.sql.exec<{ count: number }>("SELECT COUNT(*) AS count FROM overrides WHERE policy = ?", override.policy).one();
      if (count >= maxPerPolicy) return false;
    }
    const version = this.#bump(override.policy);
    this.sql.exec("INSERT INTO overrides (policy, key, body, version) VALUES (?, ?, ?, ?) ON CONFLICT(policy, key) DO UPDATE SET body = excluded.body, version = excluded.version", override.policy, field, JSON.stringify(override), version);
    this.sql.exec("DELETE FROM tombstones WHERE policy = ? AND key = ?", override.policy, field);
    this.#trim(override.policy, keep);
    return true;
  }

  delete(policy: string, field: string, keep: number): boolean {
    const removed = this.sql.exec("DELETE FROM overrides WHERE policy = ? AND key = ? RETURNING key", policy, field).toArray().length > 0;
    if (!removed) return false;
    const version = this.#bump(policy);
    this.sql.exec("INSERT INTO tombstones (policy, key, version) VALUES (?, ?, ?) ON CONFLICT(policy, key) DO UPDATE SET version = excluded.version", policy, field, version);
    this.#trim(policy, keep);
    return true;
  }

  #version(policy: string): { version: number; trimmed: number } {
    return this.sql.exec<{ version: number; trimmed: number }>("SELECT version, trimmed FROM versions WHERE policy = ?", policy).toArray()[0] ?? { version: 0, trimmed: 0 };
  }

  #bump(policy: string): number {
    return this.sql.exec<{ version: number }>("INSERT INTO versions (policy, version) VALUES (?, 1) ON CONFLICT(policy) DO UPDATE SET version = version + 1 RETURNING version", policy).one().version;
  }

  /** Keeps the latest `keep` tombstones (a quarter more before cutting, so a cut is rare). */
  #trim(policy: string, keep: number): void {
    const { count } = this.sql.exec<{ count: number }>("SELECT COUNT(*) AS count FROM tombstones WHERE policy = ?", policy).one();
    if (count <= keep + keep / 4) return;
    const cut = this.sql.exec<{ version: number }>("SELECT version FROM tombstones WHERE policy = ? ORDER BY version LIMIT 1 OFFSET ?", policy, count - keep - 1).one().version;
    this.sql.exec("DELETE FROM tombstones WHERE policy = ? AND version <= ?", policy, cut);
    this.sql.exec("UPDATE versions SET trimmed = MAX(trimmed, ?) WHERE policy = ?", cut, policy);
  }
}
