import { ValidationError } from "../core/validation.js";
import { MAX_OVERRIDES_PER_POLICY, type Override, overrideField } from "./parse.js";

/**
 * What changed in one policy's overrides after a version: the current value of every
 * override put since, and the fields (parse.ts overrideField) deleted since. A field changed
 * twice appears once, as it is now.
 */
export interface OverrideChanges {
  /** The version these changes bring a reader to. */
  version: number;
  put: Override[];
  deleted: string[];
}

/** One page of a policy's overrides; `cursor` (the table's own, opaque) asks for the next, absent on the last. */
export interface OverridePage {
  overrides: Override[];
  cursor?: string;
  /**
   * On a first page of a table with `versionedPages`: the policy's version, read with the page
   * in one step, so the page is the policy exactly as it was at that version.
   */
  version?: number;
}

/**
 * Where runtime overrides live: in the store, so every process and isolate applies them (the
 * memory store's own table, a Redis hash per policy, a Durable Object on the Worker). Each
 * process keeps them through an `Overrides` cache (overrides.ts): once it has read a policy
 * whole, it asks only for versions, and for the changes after the version it holds, so a
 * change costs the other processes work in proportion to the change, not to the table.
 */
export interface OverrideTable {
  /** Each policy's version (aligned with `policies`): a number that grows with every change. */
  versions(policies: readonly string[]): Promise<number[]>;
  /**
   * The changes of one policy after `sinceVersion`, or undefined when the table no longer
   * knows them all (its change log was trimmed past that version, or too much changed): the
   * reader then reads the policy whole.
   */
  changes(policy: string, sinceVersion: number): Promise<OverrideChanges | undefined>;
  /**
   * One page of a policy's overrides, about `count` of them, after `cursor` (undefined: the
   * first page). Expired overrides may be included (readers skip them). An override present
   * for the whole walk appears on some page; one changed meanwhile may or may not.
   */
  page(policy: string, cursor: string | undefined, count: number): Promise<OverridePage>;
  /** Adds or replaces (policy, source, key); refuses (ValidationError) a policy's MAX_OVERRIDES_PER_POLICY + 1st. */
  put(override: Override): Promise<void>;
  /** Whether (policy, source, key) was there. */
  delete(policy: string, source: string | undefined, key: string): Promise<boolean>;
  /** How many overrides a page of a whole read asks for (default MAX_CHANGES_PER_READ): a table whose every call is a round trip to one object asks for more. */
  readonly wholeReadPageSize?: number;
  /**
   * Whether version 0 means the policy has never held an override, so a first read skips it
   * (no pages, no changes: the common policy costs nothing past `versions`). True where no
   * override is stored without bumping its policy's version: the memory table, the Worker's
   * object; and Redis, whose `versions` answers -1, not 0, for overrides whose `~version` key
   * was evicted or lost.
   */
  readonly versionZeroIsEmpty?: boolean;
  /**
   * Whether a first page carries its policy's version, read with it in one step (every table
   * Spillway has): a whole read then needs no `versions` call before its pages,
   * and none of the changes after them when the first page is the last: one call, not three.
   */
  readonly versionedPages?: boolean;
}

/** The refusal of one override too many, in one place for every table. */
export function tooManyOverrides(policy: string): ValidationError {
  return new ValidationError("key", `"${policy}" already has ${MAX_OVERRIDES_PER_POLICY} overrides, the most one policy may hold; delete some first`);
}

/** A page of GET /v1/overrides: about this many, then a cursor for the next. */
export const OVERRIDES_PAGE_SIZE = 1000;

/** The most changes a table keeps per policy (older ones: readers that far behind read the policy whole). */
export const KEPT_CHANGES = 10_000;

/** The most changes one incremental read answers; more, and reading the policy whole is as cheap. */
export const MAX_CHANGES_PER_READ = 1000;

/** One policy in the memory table: its overrides by field, and its change log. */
class MemoryPolicyTable {
  readonly byField = new Map<string, Override>();
  version = 0;
  /** The field of each change, oldest first, with the version it made (at most KEPT_CHANGES + a quarter). */
  log: { version: number; field: string }[] = [];
  /** Changes at or below this version are no longer in the log. */
  trimmedVersion = 0;
  #sorted: { version: number; fields: string[] } | undefined;

  change(field: string): void {
    this.version++;
    this.log.push({ version: this.version, field });
    if (this.log.length > KEPT_CHANGES * 1.25) {
      const cut = this.log.length - KEPT_CHANGES;
      this.trimmedVersion = this.log[cut - 1]!.version;
      this.log = this.log.slice(cut);
    }
  }

  /** Fields in order, sorted once per version: paging 100,000 overrides sorts them once, not per page. */
  sortedFields(): string[] {
    if (this.#sorted?.version !== this.version) this.#sorted = { version: this.version, fields: [...this.byField.keys()].sort() };
    return this.#sorted.fields;
  }
}

/** The memory store's own table: one process, nothing shared (tests, a single `spillway serve`). */
export class MemoryOverrideTable implements OverrideTable {
  readonly versionZeroIsEmpty = true;
  readonly versionedPages = true;
  readonly #policies = new Map<string, MemoryPolicyTable>();

  #policy(name: string): MemoryPolicyTable {
    let table = this.#policies.get(name);
    if (!table) this.#policies.set(name, (table = new MemoryPolicyTable()));
    return table;
  }

  async versions(policies: readonly string[]): Promise<number[]> {
    return policies.map((policy) => this.#policies.get(policy)?.version ?? 0);
  }

  async changes(policy: string, sinceVersion: number): Promise<OverrideChanges | undefined> {
    const table = this.#policy(policy);
    if (sinceVersion > table.version || sinceVersion < table.trimmedVersion) return undefined;
    const fields = new Set<string>();
    for (let i = table.log.length - 1; i >= 0 && table.log[i]!.version > sinceVersion; i--) fields.add(table.log[i]!.field);
    if (fields.size > MAX_CHANGES_PER_READ) return undefined;
    const put: Override[] = [];
    const deleted: string[] = [];
    for (const field of fields) {
      const override = table.byField.get(field);
      if (override) put.push({ ...override });
      else deleted.push(field);
    }
    return { version: table.version, put, deleted };
  }

  async page(policy: string, cursor: string | undefined, count: number): Promise<OverridePage> {
    const table = this.#policy(policy);
    const fields = table.sortedFields();
    let start = 0;
    if (cursor !== undefined) {
      // The first field after the cursor (binary search: the fields are sorted).
      let high = fields.length;
      while (start < high) {
        const middle = (start + high) >>> 1;
        if (fields[middle]! <= cursor) start = middle + 1;
        else high = middle;
      }
    }
    const slice = fields.slice(start, start + count);
    const overrides = slice.map((field) => ({ ...table.byField.get(field)! }));
    const page: OverridePage = start + count < fields.length ? { overrides, cursor: slice[slice.length - 1]! } : { overrides };
    if (cursor === undefined) page.version = table.version;
    return page;
  }

  async put(override: Override): Promise<void> {
    const table = this.#policy(override.policy);
    const field = overrideField(override);
    if (!table.byField.has(field) && table.byField.size >= MAX_OVERRIDES_PER_POLICY) throw tooManyOverrides(override.policy);
    table.byField.set(field, { ...override });
    table.change(field);
  }

  async delete(policy: string, source: string | undefined, key: string): Promise<boolean> {
    const table = this.#policies.get(policy);
    const field = overrideField({ source, key });
    if (!table?.byField.delete(field)) return false;
    table.change(field);
    return true;
  }
}
