import type { SpillwayConfig } from "../config.js";
import type { PolicyCatalog } from "../core/policy.js";
import type { Policy } from "../core/types.js";
import { DEFAULT_OVERRIDES_TTL_MS } from "../config-schema.js";
import type { Override } from "./parse.js";
import { OverrideIndex } from "./resolver.js";
import type { OverrideTable } from "./table.js";

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
}

/**
 * The overrides in force in this process or isolate: the config's, and the store's runtime
 * table read at most every `ttlMs`. Sits between the engine and the store: the engine hands it
 * a request's policies and key and gets back ordinary (resolved) policies.
 *
 * Freshness, without a store round trip per request: past half the TTL a refresh starts in the
 * background and requests go on with what is held; only a table older than the whole TTL (an
 * idle process, the first request) is waited for. So no decision uses overrides older than
 * `ttlMs` (plus the refresh's own round trip). A failed refresh keeps the previous overrides.
 */
export class Overrides {
  readonly ttlMs: number;
  readonly table: OverrideTable | undefined;
  readonly #configured: readonly Override[];
  readonly #names: string[];
  readonly #log: (entry: Record<string, unknown>) => void;
  readonly #clockMs: () => number;
  #index: OverrideIndex;
  #runtime = new Map<string, Override[]>();
  #versions: string[] = [];
  #loadedAtMs = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<void> | undefined;

  constructor(options: OverridesOptions) {
    this.ttlMs = options.ttlMs ?? DEFAULT_OVERRIDES_TTL_MS;
    this.table = options.table;
    this.#configured = options.configured ?? [];
    this.#names = [...options.catalog.keys()];
    this.#log = options.log ?? ((entry) => console.warn(JSON.stringify({ spillway: true, ...entry })));
    this.#clockMs = options.clockMs ?? Date.now;
    this.#index = new OverrideIndex(this.#configured);
  }

  /** Whether nothing can ever apply (no config overrides, no table): callers skip resolve then. */
  get none(): boolean {
    return !this.table && this.#configured.length === 0;
  }

  /**
   * `policies` as they apply to `key` (the key as the user knows it). The same array when no
   * override applies; a promise only while a stale table is being read (see the class comment).
   */
  resolve(policies: readonly Policy[], key: string): readonly Policy[] | Promise<readonly Policy[]> {
    const nowMs = this.#clockMs();
    if (this.table && nowMs - this.#loadedAtMs >= this.ttlMs / 2) {
      const refreshing = this.#refresh();
      if (nowMs - this.#loadedAtMs >= this.ttlMs) return refreshing.then(() => this.#index.resolve(policies, key, this.#clockMs()));
    }
    const index = this.#index;
    return index.empty ? policies : index.resolve(policies, key, nowMs);
  }

  /** The override in force for (policy, key) as this process holds it (tests, docs). */
  find(policy: string, key: string): Override | undefined {
    return this.#index.find(policy, key, this.#clockMs());
  }

  /** After a change made here: the next request reads the table again, so this process applies it at once. */
  invalidate(): void {
    this.#loadedAtMs = Number.NEGATIVE_INFINITY;
  }

  #refresh(): Promise<void> {
    if (!this.#refreshing) {
      const startedMs = this.#clockMs();
      this.#refreshing = this.#read().then(
        () => {
          this.#loadedAtMs = startedMs;
          this.#refreshing = undefined;
        },
        (error: unknown) => {
          // Keep what is held; try again after half a TTL rather than on every request.
          this.#log({ event: "overrides-refresh-failed", error: String(error) });
          this.#loadedAtMs = Math.max(this.#loadedAtMs, startedMs - this.ttlMs / 2);
          this.#refreshing = undefined;
        },
      );
    }
    return this.#refreshing;
  }

  async #read(): Promise<void> {
    const table = this.table!;
    const versions = await table.versions(this.#names);
    const changed = this.#names.filter((_name, i) => versions[i] !== this.#versions[i]);
    if (changed.length === 0) return;
    const loaded = await Promise.all(changed.map((name) => table.load(name)));
    changed.forEach((name, i) => this.#runtime.set(name, loaded[i]!));
    this.#versions = versions;
    this.#index = new OverrideIndex([...this.#configured, ...[...this.#runtime.values()].flat()]);
  }
}

function isOverrideTable(value: unknown): value is OverrideTable {
  const table = value as Partial<OverrideTable> | null | undefined;
  return typeof table?.versions === "function" && typeof table.load === "function" && typeof table.put === "function" && typeof table.delete === "function";
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
