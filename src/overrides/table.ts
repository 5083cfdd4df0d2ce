import { ValidationError } from "../core/validation.js";
import { MAX_OVERRIDES_PER_POLICY, type Override } from "./parse.js";

/**
 * Where runtime overrides live: in the store, so every process and isolate applies them (the
 * memory store's own table, a Redis hash per policy, a Durable Object on the Worker). Each
 * process reads them through an `Overrides` cache (overrides.ts): a table is asked for
 * versions once per refresh and for a policy's overrides only when its version changed.
 */
export interface OverrideTable {
  /** A token per policy (aligned with `policies`) that changes whenever that policy's overrides do. */
  versions(policies: readonly string[]): Promise<string[]>;
  /** Every override of one policy (expired ones may be included; readers skip them). */
  load(policy: string): Promise<Override[]>;
  /** Adds or replaces (policy, key); refuses (ValidationError) a policy's MAX_OVERRIDES_PER_POLICY + 1st. */
  put(override: Override): Promise<void>;
  /** Whether (policy, key) was there. */
  delete(policy: string, key: string): Promise<boolean>;
}

/** The refusal of one override too many, in one place for every table. */
export function tooManyOverrides(policy: string): ValidationError {
  return new ValidationError("key", `"${policy}" already has ${MAX_OVERRIDES_PER_POLICY} overrides, the most one policy may hold; delete some first`);
}

/** The memory store's own table: one process, nothing shared (tests, a single `spillway serve`). */
export class MemoryOverrideTable implements OverrideTable {
  readonly #tables = new Map<string, Map<string, Override>>();
  readonly #versions = new Map<string, number>();

  async versions(policies: readonly string[]): Promise<string[]> {
    return policies.map((policy) => String(this.#versions.get(policy) ?? 0));
  }

  async load(policy: string): Promise<Override[]> {
    return [...(this.#tables.get(policy)?.values() ?? [])];
  }

  async put(override: Override): Promise<void> {
    let table = this.#tables.get(override.policy);
    if (!table) this.#tables.set(override.policy, (table = new Map()));
    if (!table.has(override.key) && table.size >= MAX_OVERRIDES_PER_POLICY) throw tooManyOverrides(override.policy);
    table.set(override.key, { ...override });
    this.#bump(override.policy);
  }

  async delete(policy: string, key: string): Promise<boolean> {
    const removed = this.#tables.get(policy)?.delete(key) ?? false;
    if (removed) this.#bump(policy);
    return removed;
  }

  #bump(policy: string): void {
    this.#versions.set(policy, (this.#versions.get(policy) ?? 0) + 1);
  }
}

/** A page of GET /v1/overrides: at most this many, then a cursor for the next. */
export const OVERRIDES_PAGE_SIZE = 1000;

/**
 * One page of a policy's overrides in key order, after `cursor` (the last key of the previous
 * page, opaque to the caller). Expired overrides are left out.
 */
export function overridesPage(overrides: readonly Override[], cursor: string | undefined, nowMs: number, pageSize = OVERRIDES_PAGE_SIZE): { overrides: Override[]; cursor?: string } {
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  const sorted = overrides.filter((one) => (one.expiresAtMs === undefined || one.expiresAtMs > nowMs) && (after === undefined || one.key > after)).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const page = sorted.slice(0, pageSize);
  return sorted.length > pageSize ? { overrides: page, cursor: encodeCursor(page[page.length - 1]!.key) } : { overrides: page };
}

const encoder = new TextEncoder();
function encodeCursor(key: string): string {
  let binary = "";
  for (const byte of encoder.encode(key)) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function decodeCursor(cursor: string): string {
  try {
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)));
  } catch {
    throw new ValidationError("cursor", "must be the cursor of a previous page, as it was answered");
  }
}
