import { env } from "cloudflare:workers";
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { KeyState } from "../../src/core/key-state.js";
import { parsePolicy } from "../../src/core/policy.js";
import { STATES_PER_ROW, STATE_ROW } from "../../src/worker/state-table.js";
import { uniqueKey } from "./helpers.js";

// What a decision costs in storage, counted by the probe (scripts/bench/storage-probe.ts) around
// the real LimiterObject: the bounds docs/worker.md ("What it costs") promises.
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const hourly = (name: string, algorithm: string) => parsePolicy({ name, algorithm, limit: 1000, period: "1h" }, "policy");

function metered(label: string) {
  return env.METERED_LIMITER.getByName(uniqueKey(label));
}

describe("LimiterObject storage cost", () => {
  it("writes one row per admitted decision whatever the stack (3 policies: 100 rows for 100 decisions)", async () => {
    const stack = [hourly("a", "gcra"), hourly("b", "sliding-window"), hourly("c", "fixed-window")];
    const stub = metered("stack");
    for (let i = 0; i < 100; i++) expect((await stub.check(stack, reject)).allowed).toBe(true);
    const meter = await stub.meter();
    expect(meter.rowsWritten).toBe(100);
    // One alarm for the whole period of activity, not one per decision.
    expect(meter.alarmsSet).toBe(1);
  });

  it("writes nothing for a denial (limit 5, 100 decisions: 5 rows)", async () => {
    const policy = parsePolicy({ name: "five", algorithm: "fixed-window", limit: 5, period: "1h" }, "policy");
    const stub = metered("flood");
    let admitted = 0;
    for (let i = 0; i < 100; i++) if ((await stub.check([policy], reject)).allowed) admitted++;
    expect(admitted).toBe(5);
    expect((await stub.meter()).rowsWritten).toBe(5);
  });

  it("writes one row for a fresh key's first decision, and none for a peek", async () => {
    const stub = metered("fresh");
    await stub.peek([hourly("p", "gcra")]);
    expect((await stub.meter()).rowsWritten).toBe(0);
    await stub.check([hourly("p", "gcra"), hourly("q", "token-bucket")], reject);
    expect(await stub.meter()).toMatchObject({ rowsWritten: 1, alarmsSet: 1 });
  });

  it("costs two billed rows in a key's whole life when it is seen once: its row and its alarm, then one deleteAll", async () => {
    const policy = parsePolicy({ name: "short", algorithm: "sliding-window", limit: 2, period: "50ms" }, "policy");
    const stub = metered("once");
    await stub.check([policy], reject);
    await new Promise((resolve) => setTimeout(resolve, 120));
    // The alarm has usually run by itself by now; run it if it has not.
    await runDurableObjectAlarm(stub);
    const meter = await stub.meter();
    expect(meter.rowsWritten + meter.alarmsSet).toBe(2);
    expect(meter.deleteAlls).toBe(1);
    // Nothing is left: no row, no alarm.
    const left = await runInDurableObject(stub, async (_instance, state) => ({ row: state.storage.kv.get("state"), alarm: await state.storage.getAlarm() }));
    expect(left).toEqual({ row: undefined, alarm: null });
  });

  it("sets one alarm for a key used every few ms whose state is fresh again between uses", async () => {
    // GCRA 1000/s: fresh 1 ms after a request. An alarm at each fresh time would be one per decision.
    const policy = parsePolicy({ name: "fast", algorithm: "gcra", limit: 1000, period: "1s" }, "policy");
    const stub = metered("sparse");
    for (let i = 0; i < 10; i++) {
      await stub.check([policy], reject);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(await stub.meter()).toMatchObject({ rowsWritten: 10, alarmsSet: 1, alarms: 0 });
  });

  it("keeps a stack of every algorithm in its one row across eviction", async () => {
    const stack = [
      parsePolicy({ name: "g", algorithm: "gcra", limit: 2, period: "1h" }, "p"),
      parsePolicy({ name: "tb", algorithm: "token-bucket", limit: 2, period: "1h" }, "p"),
      parsePolicy({ name: "fw", algorithm: "fixed-window", limit: 2, period: "1d" }, "p"),
      parsePolicy({ name: "sw", algorithm: "sliding-window", limit: 2, period: "1d" }, "p"),
      parsePolicy({ name: "sl", algorithm: "sliding-log", limit: 2, period: "1h" }, "p"),
    ];
    const stub = metered("evict-stack");
    await stub.check(stack, { ...reject, cost: 2 });
    await evictDurableObject(stub);
    // Each policy alone remembers its two units.
    for (const policy of stack) expect((await stub.check([policy], reject)).allowed, policy.algorithm).toBe(false);
  });
});

describe("LimiterObject upgrade from one row per policy", () => {
  it("reads the states an object holds in the table of the earlier layout, and keeps their counts", async () => {
    const perHour = parsePolicy({ name: "per-hour", algorithm: "fixed-window", limit: 5, period: "1h" }, "policy");
    const perDay = parsePolicy({ name: "per-day", algorithm: "sliding-log", limit: 3, period: "1d" }, "policy");
    const stub = env.LIMITER.getByName(uniqueKey("upgrade"));
    // The earlier layout, written as the earlier LimiterObject wrote it (its SQL, its JSON): the
    // states the core makes for 3 of 5 and 2 of 3 used.
    const core = new KeyState();
    const changes = new Map([...core.check([perHour], Date.now(), { ...reject, cost: 3 }).changes, ...core.check([perDay], Date.now(), { ...reject, cost: 2 }).changes]);
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE TABLE IF NOT EXISTS state (policy TEXT PRIMARY KEY, body TEXT NOT NULL, fresh_at_ms REAL NOT NULL)");
      for (const [policy, change] of changes) {
        sql.exec("INSERT INTO state (policy, body, fresh_at_ms) VALUES (?, ?, ?)", policy, JSON.stringify(change!.stored), change!.freshAtMs);
      }
    });
    await evictDurableObject(stub);

    expect(await stub.check([perHour], reject)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await stub.check([perDay], reject)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await stub.check([perDay], reject)).allowed).toBe(false);
    // Moved into the one row, the old table dropped: a second restart reads the row.
    await evictDurableObject(stub);
    expect(await stub.peek([perHour])).toMatchObject({ remaining: 1 });
    const tables = await runInDurableObject(stub, (_instance, state) => state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'state'").toArray().length);
    expect(tables).toBe(0);
  });

  it("drops the empty table the earlier layout left in every object it opened", async () => {
    const stub = env.LIMITER.getByName(uniqueKey("empty-legacy"));
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("CREATE TABLE IF NOT EXISTS state (policy TEXT PRIMARY KEY, body TEXT NOT NULL, fresh_at_ms REAL NOT NULL)");
    });
    await evictDurableObject(stub);
    expect((await stub.peek([hourly("p", "gcra")])).remaining).toBe(1000);
    const tables = await runInDurableObject(stub, (_instance, state) => state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'state'").toArray().length);
    expect(tables).toBe(0);
  });
});

describe("the probe's unit", () => {
  it("counts a key-value put as one row: a table shaped like the key-value table writes one row per insert or update", async () => {
    const stub = env.LIMITER.getByName(uniqueKey("unit"));
    const written = await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE TABLE kv_shape (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID");
      const insert = sql.exec("INSERT INTO kv_shape (key, value) VALUES ('state', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", "a");
      const update = sql.exec("INSERT INTO kv_shape (key, value) VALUES ('state', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", "b");
      return [insert.rowsWritten, update.rowsWritten];
    });
    expect(written).toEqual([1, 1]);
  });
});

describe("a key with many states", () => {
  it("spreads them over rows of STATES_PER_ROW: a decision writes the one row holding its stack, and eviction keeps every row", async () => {
    const stub = metered("many");
    // A rate limit service domain decided together: one key, a counter (policy) per descriptor value.
    const counters = Array.from({ length: STATES_PER_ROW * 2 + 5 }, (_, i) => parsePolicy({ name: `r.${i}`, algorithm: "fixed-window", limit: 2, period: "1h" }, "policy"));
    for (const counter of counters) await stub.check([counter], reject);
    const before = await stub.meter();
    expect(before.rowsWritten).toBe(counters.length);
    const rows = await runInDurableObject(stub, (_instance, state) => [...state.storage.kv.list<Record<string, unknown>>({ prefix: STATE_ROW })].map(([, row]) => Object.keys(row).length));
    expect(rows).toEqual([STATES_PER_ROW, STATES_PER_ROW, 5]);
    // One more decision on the last counter rewrites its row only: one row written.
    await stub.check([counters.at(-1)!], reject);
    expect((await stub.meter()).rowsWritten).toBe(before.rowsWritten + 1);
    await evictDurableObject(stub);
    for (const counter of [counters[0]!, counters[STATES_PER_ROW + 1]!, counters.at(-1)!]) expect((await stub.check([counter], reject)).remaining, counter.name).toBe(0);
    expect((await stub.check([counters.at(-1)!], reject)).allowed).toBe(false);
  });
});
