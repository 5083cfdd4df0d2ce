// The storage probe of bench:cost and of the Worker's cost tests: a LimiterObject whose storage
// counts what the pricing page bills (rows read and written, alarms set) and what clean-up does.
import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, CreditsResult, Decision, ExtendResult, Policy, ReleaseResult } from "../../src/core/types.js";
import type { CarriedDebit, NextCall } from "../../src/stores/debit-carry.js";
import { LimiterObject } from "../../src/worker/limiter-object.js";
import type { KeyStorage } from "../../src/worker/state-table.js";

/** What one object did to its storage, as Cloudflare bills it. */
export interface StorageMeter {
  /** Rows read: the SQL cursors' rowsRead, plus one per key-value get and per entry listed. */
  rowsRead: number;
  /** Rows written: the SQL cursors' rowsWritten, plus one per key-value put or delete (one row of a WITHOUT ROWID table each). */
  rowsWritten: number;
  /** setAlarm() calls: each is billed as one row written. */
  alarmsSet: number;
  /** deleteAll() calls (the alarm's clean-up). */
  deleteAlls: number;
  /** Alarm invocations (billed as Durable Object requests). */
  alarms: number;
  /** RPC calls the object answered (billed as Durable Object requests). */
  calls: number;
}

export function emptyMeter(): StorageMeter {
  return { rowsRead: 0, rowsWritten: 0, alarmsSet: 0, deleteAlls: 0, alarms: 0, calls: 0 };
}

/**
 * Wraps an object's storage so every operation the key's row makes is counted. SQL cursors are
 * summed when read (their counts are final once consumed): the probe keeps them until then.
 */
export function meteredStorage(storage: DurableObjectStorage, meter: StorageMeter): KeyStorage & { settle(): void } {
  let cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
  return {
    kv: {
      get: <T>(key: string) => {
        meter.rowsRead++;
        return storage.kv.get<T>(key);
      },
      list: <T>(options?: SyncKvListOptions) => {
        const entries = [...storage.kv.list<T>(options)];
        // A list reads each entry it answers; an empty one is counted as one read (the index probe).
        meter.rowsRead += Math.max(1, entries.length);
        return entries;
      },
      put: <T>(key: string, value: T) => {
        meter.rowsWritten++;
        storage.kv.put(key, value);
      },
      delete: (key: string) => {
        meter.rowsWritten++;
        return storage.kv.delete(key);
      },
    },
    sql: {
      exec: <T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]) => {
        const cursor = storage.sql.exec<T>(query, ...bindings);
        cursors.push(cursor as unknown as SqlStorageCursor<Record<string, SqlStorageValue>>);
        return cursor;
      },
    },
    getAlarm: () => storage.getAlarm(),
    setAlarm: (atMs: number) => {
      meter.alarmsSet++;
      return storage.setAlarm(atMs);
    },
    deleteAll: () => {
      meter.deleteAlls++;
      return storage.deleteAll();
    },
    settle: () => {
      for (const cursor of cursors) {
        meter.rowsRead += cursor.rowsRead;
        meter.rowsWritten += cursor.rowsWritten;
      }
      cursors = [];
    },
  };
}

const meters = new Map<string, StorageMeter>();
const probes = new Map<string, { settle(): void }>();

/**
 * The real LimiterObject with its storage metered. `meter()` answers the counts so far (an RPC
 * call itself, so it is not counted); `storedBytes()` the database's size.
 */
export class MeteredLimiterObject extends LimiterObject {
  /**
   * Kept by object id for the isolate's life, not on the instance: an object evicted and made
   * again (idle, or evictDurableObject) goes on counting where it left off. The base constructor
   * opens the storage before this class's fields exist, hence no instance fields here.
   */
  private get counts(): StorageMeter {
    const id = this.ctx.id.toString();
    let meter = meters.get(id);
    if (!meter) meters.set(id, (meter = emptyMeter()));
    return meter;
  }

  // Every RPC method answered counts as one Durable Object request.
  override check(policies: Policy[], options: CheckOptions): Decision {
    this.counts.calls++;
    return super.check(policies, options);
  }

  override peek(policies: Policy[]): Decision {
    this.counts.calls++;
    return super.peek(policies);
  }

  override debit(policies: Policy[], cost: number): Decision {
    this.counts.calls++;
    return super.debit(policies, cost);
  }

  override debitThen(debits: CarriedDebit[], next?: NextCall): { debits: Decision[]; next?: Decision } {
    this.counts.calls++;
    return super.debitThen(debits, next);
  }

  override reset(policies: Policy[]): void {
    this.counts.calls++;
    super.reset(policies);
  }

  override acquire(policies: Policy[], options: AcquireOptions): Promise<AcquireResult> {
    this.counts.calls++;
    return super.acquire(policies, options);
  }

  override release(policies: Policy[], leaseId: string): ReleaseResult {
    this.counts.calls++;
    return super.release(policies, leaseId);
  }

  override extend(policies: Policy[], leaseId: string, leaseMs?: number): ExtendResult {
    this.counts.calls++;
    return super.extend(policies, leaseId, leaseMs);
  }

  override credits(policy: Policy, change: CreditsChange): CreditsResult {
    this.counts.calls++;
    return super.credits(policy, change);
  }

  override claimNotice(notice: string, ttlMs: number): boolean {
    this.counts.calls++;
    return super.claimNotice(notice, ttlMs);
  }

  protected override keyStorage(): KeyStorage {
    const probe = meteredStorage(this.ctx.storage, this.counts);
    probes.set(this.ctx.id.toString(), probe);
    return probe;
  }

  override async alarm(): Promise<void> {
    this.counts.alarms++;
    await super.alarm();
  }

  meter(): StorageMeter {
    probes.get(this.ctx.id.toString())?.settle();
    return { ...this.counts };
  }

  storedBytes(): number {
    return this.ctx.storage.sql.databaseSize;
  }
}
