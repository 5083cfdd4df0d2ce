import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { OverridesObjectRpc } from "../../src/stores/durable-object-overrides.js";
import { DurableObjectOverrideTable } from "../../src/stores/durable-object-overrides.js";
import { createWorker } from "../../src/worker/index.js";
import { checkWith, uniqueKey } from "./helpers.js";

// What an isolate's reads of the OVERRIDES object bill: object requests (every RPC call) and
// the rows its SQL reads and writes (the cursors' counts, as scripts/bench/storage-probe.ts
// sums them). Each case has its own object, reached through a namespace that counts calls; a
// new createWorker() is a new isolate (its own overrides cache).

const TTL_MS = 300;
const config = {
  overridesTtl: TTL_MS,
  policies: [
    { name: "ov-a", algorithm: "fixed-window", limit: 2, period: "1h" },
    { name: "ov-b", algorithm: "fixed-window", limit: 2, period: "1h" },
    { name: "ov-c", algorithm: "gcra", limit: 2, period: "1h" },
  ],
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
type Stub = DurableObjectStub<OverridesObjectRpc>;
const bound = (env as unknown as { OVERRIDES: { getByName(name: string): Stub } }).OVERRIDES;

/** Counts calls and the SQL rows of one object, as billed. */
interface Meter {
  calls: number;
  cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[];
}
const rows = (meter: Meter) => ({
  read: meter.cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0),
  written: meter.cursors.reduce((sum, cursor) => sum + cursor.rowsWritten, 0),
});

/** A fresh overrides object, the Worker environment that reaches it, and its meter (calls counted from now on, rows once `meterRows`). */
function countedObject(name = `cost-${crypto.randomUUID()}`) {
  const meter: Meter = { calls: 0, cursors: [] };
  const stub = bound.getByName(name);
  const counted = new Proxy(stub, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== "function" || typeof property !== "string" || property === "then") return value;
      return (...args: unknown[]) => {
        meter.calls++;
        return Reflect.apply(value as (...args: unknown[]) => unknown, target, args);
      };
    },
  });
  const workerEnv = { ...env, OVERRIDES: { getByName: () => counted } };
  const table = new DurableObjectOverrideTable({ getByName: () => stub });
  /** From now on, the object's SQL cursors are kept for `rows` (the object's own `sql`, replaced in place). */
  const meterRows = () =>
    runInDurableObject(stub, (instance) => {
      const holder = instance as unknown as { sql: SqlStorage };
      const sql = holder.sql;
      holder.sql = {
        exec: (query: string, ...bindings: unknown[]) => {
          const cursor = sql.exec(query, ...bindings);
          meter.cursors.push(cursor as unknown as SqlStorageCursor<Record<string, SqlStorageValue>>);
          return cursor;
        },
      } as SqlStorage;
    });
  const reset = () => {
    meter.calls = 0;
    meter.cursors = [];
  };
  return { stub, meter, workerEnv, table, meterRows, reset };
}

const limitOf = async (worker: ReturnType<typeof createWorker>, workerEnv: unknown, key: string, policy: string) => ((await (await checkWith(worker, workerEnv, key, policy)).json()) as { limit: number }).limit;

describe("what an isolate's reads of the overrides object cost", () => {
  it("a first read is one object request, not three per policy, when no policy has overrides; a later one stays one", async () => {
    const { meter, workerEnv, meterRows, reset } = countedObject();
    await meterRows();
    reset();
    const worker = createWorker(config);
    expect(await limitOf(worker, workerEnv, uniqueKey(), "ov-a")).toBe(2);
    // Only `versions` (it was 10 calls and 13 rows read: then a version, a page and the changes after it, for each policy).
    expect(meter.calls).toBe(1);
    expect(rows(meter)).toEqual({ read: 1, written: 0 });
    await sleep(TTL_MS);
    reset();
    expect(await limitOf(worker, workerEnv, uniqueKey(), "ov-b")).toBe(2);
    expect(meter.calls).toBe(1);
  });

  it("with one policy holding overrides, a first read is one request more (its page says its version); changes reach a policy read as empty as before", async () => {
    const { meter, workerEnv, table, meterRows, reset } = countedObject();
    const key = uniqueKey();
    await table.put({ policy: "ov-a", key, limit: 5 });
    await meterRows();
    reset();
    const worker = createWorker(config);
    expect(await limitOf(worker, workerEnv, key, "ov-a")).toBe(5);
    // versions, then ov-a's first page, which says its version (was 10 calls and 15 rows read).
    expect(meter.calls).toBe(2);
    expect(rows(meter)).toEqual({ read: 4, written: 0 });

    // A change made elsewhere (another isolate) to a policy this one read as empty: its changes, within the TTL.
    await table.put({ policy: "ov-b", key, limit: 7 });
    await sleep(TTL_MS);
    reset();
    expect(await limitOf(worker, workerEnv, key, "ov-b")).toBe(7);
    expect(meter.calls).toBe(2); // versions, then ov-b's changes since 0
    await table.delete("ov-b", undefined, key);
    await sleep(TTL_MS);
    expect(await limitOf(worker, workerEnv, key, "ov-b")).toBe(2);
  });

  it("an object written by an earlier release (row version 0, a policy version above it) is read by an isolate as it was, and followed after", async () => {
    const { stub, meter, workerEnv, table, reset } = countedObject();
    const key = uniqueKey();
    // The first release's tables and rows: no version per row, no tombstones, the policy's version bumped with each put.
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      for (const name of ["overrides", "versions", "tombstones"]) sql.exec(`DROP TABLE IF EXISTS ${name}`);
      sql.exec("CREATE TABLE overrides (policy TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (policy, key))");
      sql.exec("CREATE TABLE versions (policy TEXT PRIMARY KEY, version INTEGER NOT NULL)");
      sql.exec("INSERT INTO overrides VALUES ('ov-c', ?, ?)", key, JSON.stringify({ policy: "ov-c", key, limit: 9 }));
      sql.exec("INSERT INTO overrides VALUES ('ov-c', 'other', ?)", JSON.stringify({ policy: "ov-c", key: "other", limit: 3 }));
      sql.exec("INSERT INTO versions VALUES ('ov-c', 2)");
    });
    await evictDurableObject(stub); // the next call starts the object afresh, on these tables
    reset();
    const worker = createWorker(config);
    expect(await limitOf(worker, workerEnv, key, "ov-c")).toBe(9);
    expect(meter.calls).toBe(2); // ov-c read whole, one page; ov-a and ov-b never held one: skipped
    expect(await limitOf(worker, workerEnv, uniqueKey(), "ov-a")).toBe(2);

    // Changed by this release: the isolate follows by changes, the old row kept as it was.
    await table.put({ policy: "ov-c", key: "other", limit: 4 });
    await sleep(TTL_MS);
    expect(await limitOf(worker, workerEnv, "other", "ov-c")).toBe(4);
    expect(await limitOf(worker, workerEnv, key, "ov-c")).toBe(9);
    expect(await table.delete("ov-c", undefined, key)).toBe(true);
    await sleep(TTL_MS);
    expect(await limitOf(worker, workerEnv, key, "ov-c")).toBe(2);
    // A new isolate reads the mixed table whole.
    const fresh = createWorker(config);
    expect(await limitOf(fresh, workerEnv, "other", "ov-c")).toBe(4);
    expect(await limitOf(fresh, workerEnv, key, "ov-c")).toBe(2);
  });
});
