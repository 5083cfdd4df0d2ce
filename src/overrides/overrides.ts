import type { SpillwayConfig } from "../config/config.js";
import type { PolicyCatalog } from "../core/policy.js";
import type { Policy } from "../core/types.js";
import { DEFAULT_OVERRIDES_TTL_MS } from "../config/schema.js";
import { type Override, fieldKey } from "./parse.js";
import { OverrideIndex } from "./resolver.js";
import { MAX_CHANGES_PER_READ, type OverrideChanges, type OverrideTable } from "./table.js";

export interface OverridesOptions {
  /** The config's policies: runtime overrides are read for these. */
  catalog: PolicyCatalog;
  /** The config's `overrides`. */
  configured?: readonly Override[];
  /** Where runtime overrides live (undefined: config overrides only). */
  table?: OverrideTable;
  /** How long a read of the table is used (config `overridesTtl`): the rollout bound of a change. */
  ttlMs?: number;
  /** Told when a refresh fails (the previous overrides stay in force meanwhile). */
  log?: (entry: Record<string, unknown>) => void;
  clockMs?: () => number;
  /**
   * Whether a request that must wait for a read may join one another request started (default
   * true). A Worker says false: workerd ties I/O to the request that started it, so a request
   * waits only on its own read there.
   */
  shareReads?: boolean;
}

/** A read in flight this long is given up on (its request may have been cancelled): the next starts afresh. */
const STUCK_READ_MS = 5000;

/** A policy read whole comes in pages of this many overrides (each a short store command). */
const READ_PAGE = MAX_CHANGES_PER_READ;

/**
 * The overrides in force in this process or isolate: the config's, and the store's runtime
 * table read at most every `ttlMs`. Sits between the engine and the store: the engine hands it
 * a request's policies and key and gets back ordinary (resolved) policies.
 *
 * Freshness, without a store round trip per request: past half the TTL a refresh starts in the
 * background and requests go on with what is held; only a table older than the whole TTL (an
 * idle process, the first request) is waited for. So no decision uses overrides older than
 * `ttlMs` (plus the refresh's own round trip). A failed refresh keeps the previous overrides.
 *
 * Cost of a change: a refresh asks the table for each policy's version (one round trip); a
 * policy whose version moved is asked for its changes since the version held, which are
 * applied to the index in place. Only the first read of a policy (or one whose change log no
 * longer reaches back to the version held) reads it whole, in pages; a first read of a policy
 * at version 0 reads nothing more where the table says that means empty (versionZeroIsEmpty).
 * On the Worker, a first read is one object call, and one more per policy holding overrides.
 */
export class Overrides {
  readonly ttlMs: number;
  readonly table: OverrideTable | undefined;
  readonly #configured: readonly Override[];
  readonly #names: string[];
  readonly #log: (entry: Record<string, unknown>) => void;
  readonly #clockMs: () => number;
  readonly #index: OverrideIndex;
  /** The version of each policy's overrides the index holds (absent: never read). */
  readonly #versions = new Map<string, number>();
  #loadedAtMs = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<void> | undefined;
  #refreshingSinceMs = 0;
  /** A read started before (or at) this may predate a change made here: it does not count as fresh. */
  #invalidatedAtMs = Number.NEGATIVE_INFINITY;
  readonly #shareReads: boolean;

  constructor(options: OverridesOptions) {
    this.ttlMs = options.ttlMs ?? DEFAULT_OVERRIDES_TTL_MS;
    this.table = options.table;
    this.#configured = options.configured ?? [];
    this.#names = [...options.catalog.keys()];
    this.#log = options.log ?? ((entry) => console.warn(JSON.stringify({ spillway: true, ...entry })));
    this.#clockMs = options.clockMs ?? Date.now;
    this.#index = new OverrideIndex(this.#configured);
    this.#shareReads = options.shareReads ?? true;
  }

  /** Whether nothing can ever apply (no config overrides, no table): callers skip resolve then. */
  get none(): boolean {
    return !this.table && this.#configured.length === 0;
  }

  /**
   * `policies` as they apply to `key` (the key as the user knows it). The same array when no
   * override applies; a promise only while a stale table is being read (see the class comment).
   */
  resolve(policies: readonly Policy[], key: string, defer?: (promise: Promise<unknown>) => void, source?: string): readonly Policy[] | Promise<readonly Policy[]> {
    const nowMs = this.#clockMs();
    if (this.table && nowMs - this.#loadedAtMs >= this.ttlMs / 2) {
      if (nowMs - this.#loadedAtMs >= this.ttlMs) return this.#refresh(this.#shareReads).then(() => this.#index.resolve(policies, key, this.#clockMs(), source));
      // In the background; `defer` (a Worker's waitUntil) keeps it alive past this request.
      const refreshing = this.#refresh(true);
      defer?.(refreshing);
    }
    const index = this.#index;
    return index.empty ? policies : index.resolve(policies, key, nowMs, source);
  }

  /** The override in force for (policy, key) from `source` as this process holds it (tests, docs). */
  find(policy: string, key: string, source?: string): Override | undefined {
    return this.#index.find(policy, key, this.#clockMs(), source);
  }

  /** After a change made here: the next request reads the table again, so this process applies it at once. */
  invalidate(): void {
    this.#loadedAtMs = Number.NEGATIVE_INFINITY;
    this.#refreshing = undefined;
    this.#invalidatedAtMs = this.#clockMs();
  }

  /** A read of the table; `join`: share the one in flight (unless it looks stuck). */
  #refresh(join: boolean): Promise<void> {
    const startedMs = this.#clockMs();
    if (join && this.#refreshing && startedMs - this.#refreshingSinceMs < STUCK_READ_MS) return this.#refreshing;
    const reading = this.#read().then(
      () => {
        if (startedMs > this.#invalidatedAtMs) this.#loadedAtMs = Math.max(this.#loadedAtMs, startedMs);
      },
      (error: unknown) => {
        // Keep what is held; try again after half a TTL rather than on every request.
        this.#log({ event: "overrides-refresh-failed", error: String(error) });
        this.#loadedAtMs = Math.max(this.#loadedAtMs, startedMs - this.ttlMs / 2);
      },
    );
    if (join) {
      this.#refreshing = reading;
      this.#refreshingSinceMs = startedMs;
      void reading.then(() => {
        if (this.#refreshing === reading) this.#refreshing = undefined;
      });
    }
    return reading;
  }

  async #read(): Promise<void> {
    const table = this.table!;
    const versions = await table.versions(this.#names);
    await Promise.all(
      this.#names.map((name, i) => {
        const held = this.#versions.get(name);
        if (versions[i] === held) return undefined;
        // Never an override in this table: nothing to read (the policy's runtime part is empty, as it starts).
        if (versions[i] === 0 && held === undefined && table.versionZeroIsEmpty) return void this.#versions.set(name, 0);
        return this.#catchUp(table, name);
      }),
    );
  }

  /** Brings one policy up to the table's version: its changes since the version held, or the policy whole. */
  async #catchUp(table: OverrideTable, policy: string): Promise<void> {
    const held = this.#versions.get(policy);
    const changes = held === undefined ? undefined : await table.changes(policy, held);
    if (changes) return this.#apply(policy, changes);
    // Read whole: the version as of the first page, every page, then what changed meanwhile (an
    // override changed during the walk may be missed by its pages, never by the changes after
    // `before`). With versionedPages the version comes with the first page, and a policy that
    // fits in it is exactly that page: one call, no changes to ask for.
    const size = table.wholeReadPageSize ?? READ_PAGE;
    let before = table.versionedPages ? undefined : (await table.versions([policy]))[0]!;
    let page = await table.page(policy, undefined, size);
    const exact = before === undefined && page.version !== undefined && page.cursor === undefined;
    before ??= page.version;
    if (before === undefined) {
      // A table that should have said its version did not (an object of an earlier release, mid-deploy): the version first, as above.
      [before] = await table.versions([policy]);
      page = await table.page(policy, undefined, size);
    }
    const overrides = [...page.overrides];
    while (page.cursor !== undefined) {
      page = await table.page(policy, page.cursor, size);
      overrides.push(...page.overrides);
    }
    const after = exact ? undefined : await table.changes(policy, before!);
    const version = after?.version ?? before!;
    // Two reads may overlap (a Worker's requests each read their own): the newer one stands.
    if (version < (this.#versions.get(policy) ?? -1)) return;
    this.#index.replace(policy, overrides);
    this.#versions.delete(policy);
    this.#apply(policy, after ?? { version, put: [], deleted: [] });
  }

  /** Changes applied in place; changes older than what is held are not (an overlapping read's). */
  #apply(policy: string, changes: OverrideChanges): void {
    const held = this.#versions.get(policy);
    if (held !== undefined && changes.version <= held) return;
    for (const field of changes.deleted) {
      const { source, key } = fieldKey(field);
      this.#index.remove(policy, source, key);
    }
    for (const override of changes.put) this.#index.put(override);
    this.#versions.set(policy, changes.version);
  }
}

function isOverrideTable(value: unknown): value is OverrideTable {
  const table = value as Partial<OverrideTable> | null | undefined;
  return typeof table?.versions === "function" && typeof table.changes === "function" && typeof table.page === "function" && typeof table.put === "function" && typeof table.delete === "function";
}

/** The runtime override table of a store (MemoryStore, RedisStore), looking through decorators (LocalCache). */
export function overrideTableOf(limiter: unknown): OverrideTable | undefined {
  let at = limiter;
  for (let depth = 0; depth < 8 && at !== null && typeof at === "object"; depth++) {
    const table = (at as { overrides?: unknown }).overrides;
    if (isOverrideTable(table)) return table;
    at = (at as { store?: unknown }).store;
  }
  return undefined;
}

const shared = new WeakMap<SpillwayConfig, WeakMap<object, Overrides>>();
const noTable = {};

/**
 * The overrides of a config over a store: its `overrides`, and the store's runtime table when
 * it has one. One per (config, table), so the /v1 API and the gateway of a process share a cache.
 */
export function overridesFor(config: SpillwayConfig, limiter: unknown, log?: (entry: Record<string, unknown>) => void): Overrides {
  const table = overrideTableOf(limiter);
  let byTable = shared.get(config);
  if (!byTable) shared.set(config, (byTable = new WeakMap()));
  let found = byTable.get(table ?? noTable);
  if (!found) {
    found = new Overrides({ catalog: config.catalog, configured: config.overrides, table, ttlMs: config.overridesTtlMs, log });
    byTable.set(table ?? noTable, found);
  }
  return found;
}
