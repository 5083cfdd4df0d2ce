import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DurableObjectOverrideTable, type OverridesObjectRpc } from "../../src/stores/durable-object-overrides.js";
import { OverridesObject } from "../../src/worker/overrides-object.js";
import { overrideField } from "../../src/overrides/parse.js";

// The OVERRIDES Durable Object as isolates follow it: versions, the changes after a version
// (rows and tombstones), pages by key, tombstones trimmed, and objects written by an earlier
// release read as they were. Each case has its own object.

type Namespace = { getByName(name: string): DurableObjectStub<OverridesObjectRpc> };
const namespace = () => {
  const name = `log-${crypto.randomUUID()}`;
  const bound = (env as unknown as { OVERRIDES: Namespace }).OVERRIDES;
  return { stub: bound.getByName(name), table: new DurableObjectOverrideTable({ getByName: () => bound.getByName(name) }) };
};

describe("the overrides Durable Object's change log", () => {
  it("answers the changes after a version: each changed override once, as it is now, and the deleted ones", async () => {
    const { table } = namespace();
    await table.put({ policy: "p", key: "a", limit: 1 });
    const [since] = await table.versions(["p"]);
    await table.put({ policy: "p", key: "b", limit: 2 });
    await table.put({ policy: "p", key: "b", limit: 3 });
    await table.put({ policy: "p", key: "c", source: "ip", limit: 4 });
    expect(await table.delete("p", undefined, "a")).toBe(true);
    const changes = await table.changes("p", since!);
    expect(changes!.version).toBe(since! + 4);
    expect(changes!.put).toEqual(expect.arrayContaining([{ policy: "p", key: "b", limit: 3 }, { policy: "p", key: "c", source: "ip", limit: 4 }]));
    expect(changes!.put).toHaveLength(2);
    expect(changes!.deleted).toEqual(["a"]);
    // Put again after its deletion: no longer a tombstone.
    await table.put({ policy: "p", key: "a", limit: 9 });
    expect((await table.changes("p", since!))!.deleted).toEqual([]);
    expect(await table.changes("p", since! + 99)).toBeUndefined();
  });

  it("pages by key after a cursor", async () => {
    const { table } = namespace();
    for (let i = 0; i < 25; i++) await table.put({ policy: "p", key: `k${String(i).padStart(2, "0")}`, limit: 1 });
    const first = await table.page("p", undefined, 10);
    const second = await table.page("p", first.cursor, 10);
    const third = await table.page("p", second.cursor, 10);
    expect([first.overrides.length, second.overrides.length, third.overrides.length, third.cursor]).toEqual([10, 10, 5, undefined]);
    expect(second.overrides[0]!.key).toBe("k10");
    // A first page says the version it is of (read in the same call); later pages do not.
    expect([first.version, second.version]).toEqual([25, undefined]);
  });

  it("keeps the latest tombstones: an isolate further behind reads the policy whole", async () => {
    const { stub, table } = namespace();
    const keep = 4;
    for (let i = 0; i < 10; i++) await stub.put({ policy: "p", key: `k${i}`, limit: 1 }, `k${i}`, 100, keep);
    for (let i = 0; i < 10; i++) await stub.delete("p", `k${i}`, keep);
    expect(await table.changes("p", 10)).toBeUndefined(); // its tombstones were trimmed
    expect((await table.changes("p", 18))!.deleted).toEqual(["k8", "k9"]);
  });

  it("an object written by an earlier release (no versions per row, no tombstones) reads as it did", async () => {
    const { stub } = namespace();
    const answer = await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      for (const table of ["overrides", "versions", "tombstones"]) sql.exec(`DROP TABLE IF EXISTS ${table}`);
      sql.exec("CREATE TABLE overrides (policy TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (policy, key))");
      sql.exec("CREATE TABLE versions (policy TEXT PRIMARY KEY, version INTEGER NOT NULL)");
      sql.exec("INSERT INTO overrides VALUES ('p', 'old', ?)", JSON.stringify({ policy: "p", key: "old", limit: 7 }));
      sql.exec("INSERT INTO overrides VALUES ('p', 'far', ?)", JSON.stringify({ policy: "p", key: "far", limit: 8, expiresAtMs: 9007199254740991 }));
      sql.exec("INSERT INTO versions VALUES ('p', 2)");
      const upgraded = new OverridesObject(state, {});
      const page = upgraded.page("p", null, 10);
      upgraded.put({ policy: "p", key: "old", source: "ip", limit: 9 }, overrideField({ key: "old", source: "ip" }), 100, 100);
      return { page, versions: upgraded.versions(["p"]), changes: upgraded.changes("p", 2, 100) };
    });
    expect(answer.page.bodies.map((body) => JSON.parse(body).key)).toEqual(["far", "old"]);
    expect(answer.versions).toEqual([3]);
    expect(answer.changes).toEqual({ version: 3, put: [JSON.stringify({ policy: "p", key: "old", source: "ip", limit: 9 })], deleted: [] });
    // Read through the table, the far expiry is no expiry (listing it never fails).
    const table = new DurableObjectOverrideTable({ getByName: () => stub });
    expect((await table.page("p", undefined, 10)).overrides).toContainEqual({ policy: "p", key: "far", limit: 8 });
  });
});
