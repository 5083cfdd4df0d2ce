import { DurableObject } from "cloudflare:workers";
import type { Override } from "../overrides/parse.js";
import type { OverridesObjectRpc } from "../stores/durable-object-overrides.js";

/**
 * The Worker's runtime overrides (PUT /v1/overrides): one object, bound as OVERRIDES, holding
 * every policy's overrides in SQLite with a version per policy. Isolates read it once per
 * `overridesTtl` (src/overrides/overrides.ts): a version check, and a policy's rows only when
 * its version moved. Its single thread makes the 100,000-per-policy cap exact.
 */
export class OverridesObject extends DurableObject<Record<string, unknown>> implements OverridesObjectRpc {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Record<string, unknown>) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS overrides (policy TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (policy, key))");
    this.sql.exec("CREATE TABLE IF NOT EXISTS versions (policy TEXT PRIMARY KEY, version INTEGER NOT NULL)");
  }

  versions(policies: string[]): string[] {
    const rows = this.sql.exec<{ policy: string; version: number }>("SELECT policy, version FROM versions").toArray();
    const byPolicy = new Map(rows.map((row) => [row.policy, String(row.version)]));
    return policies.map((policy) => byPolicy.get(policy) ?? "0");
  }

  load(policy: string): Override[] {
    const nowMs = Date.now();
    // Expired overrides apply nowhere: drop them, so they do not count towards the cap.
    this.sql.exec("DELETE FROM overrides WHERE policy = ? AND json_extract(body, '$.expiresAtMs') <= ?", policy, nowMs);
    return this.sql.exec<{ body: string }>("SELECT body FROM overrides WHERE policy = ?", policy).toArray().map((row) => JSON.parse(row.body) as Override);
  }

  put(override: Override, maxPerPolicy: number): boolean {
    const exists = this.sql.exec("SELECT 1 FROM overrides WHERE policy = ? AND key = ?", override.policy, override.key).toArray().length > 0;
    if (!exists) {
      const { count } = this.sql.exec<{ count: number }>("SELECT COUNT(*) AS count FROM overrides WHERE policy = ?", override.policy).one();
      if (count >= maxPerPolicy) return false;
    }
    this.sql.exec("INSERT INTO overrides (policy, key, body) VALUES (?, ?, ?) ON CONFLICT(policy, key) DO UPDATE SET body = excluded.body", override.policy, override.key, JSON.stringify(override));
    this.#bump(override.policy);
    return true;
  }

  delete(policy: string, key: string): boolean {
    const removed = this.sql.exec("DELETE FROM overrides WHERE policy = ? AND key = ? RETURNING key", policy, key).toArray().length > 0;
    if (removed) this.#bump(policy);
    return removed;
  }

  #bump(policy: string): void {
    this.sql.exec("INSERT INTO versions (policy, version) VALUES (?, 1) ON CONFLICT(policy) DO UPDATE SET version = version + 1", policy);
  }
}
