import { describe, expect, it } from "vitest";
import { parseConfig, withDryRunEnv } from "../../../src/config/config.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { ValidationError } from "../../../src/core/validation.js";
import { createNodeGateway } from "../../../src/node/http/gateway.js";
import { Overrides, overridesFor } from "../../../src/overrides/overrides.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { MAX_OVERRIDES_PER_POLICY, fieldKey, overrideField, parseOverride } from "../../../src/overrides/parse.js";
import { OverrideIndex } from "../../../src/overrides/resolver.js";
import { MemoryOverrideTable, type OverrideTable } from "../../../src/overrides/table.js";

const window = parsePolicy({ name: "per-key", algorithm: "fixed-window", limit: 10, period: "1m" }, "p");
const gcra = parsePolicy({ name: "smooth", algorithm: "gcra", limit: 60, period: "1m", burst: 5 }, "p");
const conc = parsePolicy({ name: "slots", algorithm: "concurrency", limit: 2 }, "p");
const catalog = new Map([window, gcra, conc].map((policy) => [policy.name, policy]));
const NOW = 1_800_000_000_000;

describe("override resolution", () => {
  const index = new OverrideIndex([
    { policy: "per-key", key: "acme-*", limit: 100 },
    { policy: "per-key", key: "acme-eu-*", limit: 200 },
    { policy: "per-key", key: "acme-eu-1", limit: 1 },
    { policy: "per-key", key: "*", limit: 50 },
    { policy: "per-key", key: "old", limit: 7, expiresAtMs: NOW - 1 },
    { policy: "smooth", key: "acme-*", limit: 600 },
  ]);
  const limitOf = (key: string) => index.resolve([window], key, NOW)[0]!.limit;

  it("exact beats every wildcard; among wildcards the longest prefix wins", () => {
    expect(limitOf("acme-eu-1")).toBe(1);
    expect(limitOf("acme-eu-2")).toBe(200);
    expect(limitOf("acme-us")).toBe(100);
    expect(limitOf("acme-")).toBe(100);
    expect(limitOf("acm")).toBe(50);
  });

  it("an expired override applies nowhere", () => {
    expect(limitOf("old")).toBe(50);
  });

  it("keeps the name and algorithm; a limit without burst moves gcra's burst with it", () => {
    const [resolved] = index.resolve([gcra], "acme-x", NOW);
    expect(resolved).toEqual({ ...gcra, limit: 600, burst: 600 });
    expect(new OverrideIndex([{ policy: "smooth", key: "k", burst: 9 }]).resolve([gcra], "k", NOW)[0]).toEqual({ ...gcra, burst: 9 });
    expect(new OverrideIndex([{ policy: "per-key", key: "k", periodMs: 1000 }]).resolve([window], "k", NOW)[0]).toEqual({ ...window, periodMs: 1000 });
  });

  it("answers the same arrays and policies while nothing changes (stores cache by identity)", () => {
    const stack = [window, conc];
    expect(index.resolve(stack, "nobody-at-all", NOW)).not.toBe(stack); // "*" applies to per-key
    expect(new OverrideIndex([]).resolve(stack, "x", NOW)).toBe(stack);
    expect(index.resolve(stack, "acme-1", NOW)).toBe(index.resolve(stack, "acme-2", NOW));
    expect(index.resolve([window], "acme-1", NOW)[0]).toBe(index.resolve([window], "acme-2", NOW)[0]);
    expect(index.resolve([conc], "acme-1", NOW)).toEqual([conc]);
  });
});

describe("overrides scoped by key source", () => {
  const index = new OverrideIndex([
    { policy: "per-key", key: "127.0.0.1", source: "ip", limit: 1000 },
    { policy: "per-key", key: "acme-*", source: "header:x-api-key", limit: 100 },
    { policy: "per-key", key: "acme-1|127.0.0.1", source: "[header:x-api-key|ip]", limit: 7 },
    { policy: "per-key", key: "given-*", limit: 5 },
  ]);
  const limitOf = (key: string, source?: string) => index.resolve([window], key, NOW, source)[0]!.limit;

  it("a key sees only the overrides of the source it was read from", () => {
    expect(limitOf("127.0.0.1", "ip")).toBe(1000);
    expect(limitOf("127.0.0.1", "header:x-api-key")).toBe(10); // the same value from a header borrows nothing
    expect(limitOf("127.0.0.1")).toBe(10); // nor does a key given to /v1/check
    expect(limitOf("acme-2", "header:x-api-key")).toBe(100);
    expect(limitOf("acme-2", "query:x-api-key")).toBe(10);
    expect(limitOf("acme-1|127.0.0.1", "[header:x-api-key|ip]")).toBe(7);
    expect(limitOf("given-1")).toBe(5);
    expect(limitOf("given-1", "ip")).toBe(10);
  });

  it("names a source as a route writes its key: ip/N is ip, header names lower-cased, a composite is its parts", () => {
    const sourceOf = (source: unknown) => parseOverride({ policy: "per-key", key: "k", limit: 1, source }, catalog, "overrides.0", NOW).source;
    expect(sourceOf("ip/56")).toBe("ip");
    expect(sourceOf("header:X-Api-Key")).toBe("header:x-api-key");
    expect(sourceOf(["header:X-Api-Key", "ip/56"])).toBe("[header:x-api-key|ip]");
    expect(sourceOf(["query:a|b", "path"])).toBe("[query:a\\|b|path]");
    expect(() => sourceOf("ipv4")).toThrow(/^overrides\.0\.source: must be one of/);
    expect(() => sourceOf([])).toThrow(/^overrides\.0\.source: /);
  });

  it("a config holds one override per (policy, source, key)", () => {
    const policies = [{ name: "per-key", algorithm: "fixed-window", limit: 10, period: "1m" }];
    expect(parseConfig({ policies, overrides: [{ policy: "per-key", key: "a", limit: 1 }, { policy: "per-key", key: "a", source: "ip", limit: 2 }] }).overrides).toHaveLength(2);
    expect(() => parseConfig({ policies, overrides: [{ policy: "per-key", key: "a", source: "ip/56", limit: 1 }, { policy: "per-key", key: "a", source: "ip", limit: 2 }] })).toThrow(/^overrides\.1\.key: overrides "a" of "per-key" from "ip" twice/);
  });

  it("stores each (source, key) in its own field; a key without a source in its own name, as before sources", () => {
    const cases = [{ key: "k" }, { key: "k", source: "ip" }, { key: "\u0000k" }, { key: '\u0000["ip","k"]' }, { key: "k", source: "[header:a|ip]" }];
    const fields = cases.map((one) => overrideField(one));
    expect(fields[0]).toBe("k");
    expect(new Set(fields).size).toBe(cases.length);
    cases.forEach((one, i) => expect(fieldKey(fields[i]!)).toEqual({ source: one.source, key: one.key }));
  });

  it("a runtime override laid over a config one, then deleted, gives the config's back", () => {
    const layered = new OverrideIndex([{ policy: "per-key", key: "acme-*", limit: 100 }]);
    layered.put({ policy: "per-key", key: "acme-*", limit: 200 });
    layered.put({ policy: "per-key", key: "acme-eu-*", limit: 300 });
    expect(layered.resolve([window], "acme-eu-1", NOW)[0]!.limit).toBe(300);
    layered.remove("per-key", undefined, "acme-eu-*");
    layered.remove("per-key", undefined, "acme-*");
    expect(layered.resolve([window], "acme-eu-1", NOW)[0]!.limit).toBe(100);
    layered.replace("per-key", [{ policy: "per-key", key: "x", limit: 1 }]);
    expect(layered.resolve([window], "x", NOW)[0]!.limit).toBe(1);
    expect(layered.resolve([window], "acme-1", NOW)[0]!.limit).toBe(100);
  });
});

describe("override validation", () => {
  const fieldOf = (input: unknown) => {
    try {
      parseOverride(input, catalog, "overrides.0", NOW);
    } catch (error) {
      return (error as Error).message;
    }
    return "accepted";
  };
  it.each([
    [{ policy: "per-key", key: "k", limit: 0 }, /^overrides\.0\.limit: .*positive integer/],
    [{ policy: "per-key", key: "k", burst: 3 }, /^overrides\.0\.burst: .*only used by gcra and token-bucket/],
    [{ policy: "slots", key: "k", period: "1s" }, /^overrides\.0\.period: .*not used by concurrency/],
    [{ policy: "per-key", key: "k" }, /^overrides\.0: .*at least one of limit, burst and period/],
    [{ policy: "per-key", key: "", limit: 1 }, /^overrides\.0\.key: /],
    [{ policy: "per-key", key: "k".repeat(513), limit: 1 }, /^overrides\.0\.key: .*512/],
    [{ policy: "per-key", key: "k", limit: 1, period: "soon" }, /^overrides\.0\.period: /],
    [{ policy: "per-key", key: "k", limit: 1, expiresAt: NOW - 5 }, /^overrides\.0\.expiresAt: must be in the future/],
    [{ policy: "per-key", key: "k", limit: 1, expiresAt: "tomorrow" }, /^overrides\.0\.expiresAt: /],
    [{ policy: "per-key", key: "k", limit: 1, algorithm: "gcra" }, /^overrides\.0\.algorithm: is not a known field/],
    [{ policy: "nope", key: "k", limit: 1 }, /^overrides\.0\.policy: no policy named "nope"/],
  ])("refuses a bad override naming the field (%#)", (input, message) => {
    expect(fieldOf(input)).toMatch(message);
  });

  it("accepts durations and dates as written", () => {
    expect(parseOverride({ policy: "per-key", key: "k", period: "2s", expiresAt: "2099-01-01T00:00:00Z" }, catalog, "", NOW)).toEqual({ policy: "per-key", key: "k", periodMs: 2000, expiresAtMs: Date.parse("2099-01-01T00:00:00Z") });
  });

  it("in a config: an unknown policy and a (policy, key) twice are errors naming the entry", () => {
    const policies = [{ name: "per-key", algorithm: "fixed-window", limit: 10, period: "1m" }];
    expect(() => parseConfig({ policies, overrides: [{ policy: "other", key: "a", limit: 1 }] })).toThrow(/^overrides\.0\.policy: no policy named "other"/);
    expect(() => parseConfig({ policies, overrides: [{ policy: "per-key", key: "a", limit: 1 }, { policy: "per-key", key: "a", limit: 2 }] })).toThrow(/^overrides\.1\.key: /);
    expect(parseConfig({ policies }).overridesTtlMs).toBe(10_000);
    expect(() => parseConfig({ policies, overridesTtl: 0 })).toThrow(/^overridesTtl: /);
  });
});

describe("SPILLWAY_DRY_RUN", () => {
  const config = parseConfig({});
  it("turns dry-run on with 1 or true, leaves it with 0, false or empty, refuses anything else", () => {
    expect(withDryRunEnv(config, "1").dryRun).toBe(true);
    expect(withDryRunEnv(config, "true").dryRun).toBe(true);
    for (const off of [undefined, "", "0", "false"]) expect(withDryRunEnv(config, off).dryRun).toBe(false);
    expect(() => withDryRunEnv(config, "yes")).toThrow(/^SPILLWAY_DRY_RUN: must be "1" or "true"/);
  });
});

/** A table that does what `table` does, with some methods replaced (counting, failing, held reads). */
function over(table: OverrideTable, replaced: Partial<OverrideTable> = {}): OverrideTable {
  return {
    versions: (names) => table.versions(names),
    changes: (policy, since) => table.changes(policy, since),
    page: (policy, cursor, count) => table.page(policy, cursor, count),
    put: (override) => table.put(override),
    delete: (policy, source, key) => table.delete(policy, source, key),
    ...replaced,
  };
}

describe("a config override whose expiresAt has passed", () => {
  it("keeps the file valid (a restart or reload after the date still starts) and applies to nothing", async () => {
    const policies = [{ name: "per-key", algorithm: "fixed-window", limit: 2, period: "1m" }];
    const config = parseConfig({ policies, overrides: [{ policy: "per-key", key: "acme", limit: 100, expiresAt: "2020-01-01T00:00:00Z" }] });
    expect(config.overrides[0]!.expiresAtMs).toBe(Date.parse("2020-01-01T00:00:00Z"));
    const overrides = new Overrides({ catalog: config.catalog, configured: config.overrides, ttlMs: 1000 });
    const [effective] = await overrides.resolve(config.policies, "acme");
    expect(effective!.limit).toBe(2);
    // A runtime override (PUT) in the past is still refused: it would be stored for nothing.
    expect(() => parseOverride({ policy: "per-key", key: "acme", limit: 100, expiresAt: "2020-01-01T00:00:00Z" }, config.catalog, "", Date.now())).toThrow(/^expiresAt: must be in the future/);
  });
});

describe("the overrides cache", () => {
  function cached(table: OverrideTable, clock: { ms: number }, logs: unknown[] = []) {
    return new Overrides({ catalog, table, ttlMs: 1000, clockMs: () => clock.ms, log: (entry) => logs.push(entry) });
  }
  const limitOf = async (overrides: Overrides, key = "k") => (await overrides.resolve([window], key))[0]!.limit;

  it("reads the table at most once per half TTL, waits only when older than the TTL", async () => {
    const table = new MemoryOverrideTable();
    let reads = 0;
    const counting = over(table, { versions: (names) => (reads++, table.versions(names)) });
    const clock = { ms: 0 };
    const overrides = cached(counting, clock);
    expect(overrides.resolve([window], "k")).toBeInstanceOf(Promise); // nothing read yet: wait for it
    expect(await limitOf(overrides)).toBe(10);
    await table.put({ policy: "per-key", key: "k", limit: 3 });
    clock.ms = 400;
    expect(overrides.resolve([window], "k")).toEqual([window]); // fresh: no read, no promise
    const readsAtFirst = reads;
    clock.ms = 600; // past half: refreshed in the background, this request goes on with what is held
    expect(await overrides.resolve([window], "k")).toEqual([window]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(await limitOf(overrides)).toBe(3);
    expect(reads).toBe(readsAtFirst + 1);
    await table.delete("per-key", undefined, "k");
    clock.ms = 5000; // idle past the TTL: waited for
    expect(await limitOf(overrides)).toBe(10);
  });

  it("a failed refresh keeps the overrides held and is logged, not thrown", async () => {
    const table = new MemoryOverrideTable();
    await table.put({ policy: "per-key", key: "k", limit: 4 });
    const clock = { ms: 0 };
    const logs: unknown[] = [];
    let down = false;
    const flaky = over(table, { versions: (names) => (down ? Promise.reject(new Error("store down")) : table.versions(names)) });
    const overrides = cached(flaky, clock, logs);
    expect(await limitOf(overrides)).toBe(4);
    down = true;
    clock.ms = 2000;
    expect(await limitOf(overrides)).toBe(4);
    expect(logs).toEqual([expect.objectContaining({ event: "overrides-refresh-failed" })]);
  });

  it("a read in flight when a change is made here does not hide it; a Worker's request waits on its own read", async () => {
    const table = new MemoryOverrideTable();
    let hold: (() => void) | undefined;
    const held = over(table, {
      versions: async (names) => {
        const versions = await table.versions(names);
        if (hold === undefined) await new Promise<void>((resolve) => (hold = resolve));
        return versions;
      },
    });
    const clock = { ms: 0 };
    for (const shareReads of [true, false]) {
      hold = undefined;
      const overrides = new Overrides({ catalog, table: held, ttlMs: 1000, clockMs: () => clock.ms, shareReads });
      const first = overrides.resolve([window], "k"); // its read reads versions, then waits
      await new Promise((resolve) => setTimeout(resolve, 0));
      await table.put({ policy: "per-key", key: "k", limit: shareReads ? 6 : 7 });
      clock.ms += 1;
      overrides.invalidate();
      clock.ms += 1;
      const second = overrides.resolve([window], "k");
      hold!();
      expect((await second)[0]!.limit).toBe(shareReads ? 6 : 7);
      await first; // the older read ends last and is dropped: the change stays applied
      expect(overrides.find("per-key", "k")?.limit).toBe(shareReads ? 6 : 7);
      await table.delete("per-key", undefined, "k");
    }
  });

  it("after a change made here, this process applies it at once", async () => {
    const table = new MemoryOverrideTable();
    const overrides = cached(table, { ms: 0 });
    expect(await limitOf(overrides)).toBe(10);
    await table.put({ policy: "per-key", key: "k", limit: 2 });
    overrides.invalidate();
    expect(await limitOf(overrides)).toBe(2);
  });
});

describe("what a first read of the overrides costs", () => {
  /** `table` with its flags, each call named in `calls`; `replaced` methods instead of the table's. */
  function counted(table: OverrideTable, calls: string[], replaced: Partial<OverrideTable> = {}): OverrideTable {
    const named = over(table, replaced);
    return {
      versionZeroIsEmpty: table.versionZeroIsEmpty,
      versionedPages: table.versionedPages,
      versions: (names) => (calls.push("versions"), named.versions(names)),
      changes: (policy, since) => (calls.push("changes"), named.changes(policy, since)),
      page: (policy, cursor, count) => (calls.push("page"), named.page(policy, cursor, count)),
      put: named.put,
      delete: named.delete,
      ...replaced,
    };
  }
  const fresh = (table: OverrideTable, clock = { ms: 0 }) => new Overrides({ catalog, table, ttlMs: 1000, clockMs: () => clock.ms });

  it("reads only versions when no policy ever held an override, and one page for a policy that fits in it", async () => {
    const table = new MemoryOverrideTable();
    const calls: string[] = [];
    const clock = { ms: 0 };
    const overrides = fresh(counted(table, calls), clock);
    expect((await overrides.resolve([window], "k"))[0]!.limit).toBe(10);
    expect(calls).toEqual(["versions"]); // three policies, none ever held one
    await table.put({ policy: "smooth", key: "k", limit: 6 });
    clock.ms = 2000;
    calls.length = 0;
    expect((await overrides.resolve([gcra], "k"))[0]!.limit).toBe(6);
    expect(calls).toEqual(["versions", "changes"]); // followed from version 0 by its changes

    calls.length = 0;
    const other = fresh(counted(table, calls));
    expect((await other.resolve([gcra], "k"))[0]!.limit).toBe(6);
    expect(calls).toEqual(["versions", "page"]); // the page says its version: no changes to ask for
  });

  it("a policy of several pages takes its version from the first: a change made during the walk is not missed", async () => {
    for (const versionedPages of [true, false]) {
      const table = new MemoryOverrideTable();
      for (let i = 0; i < 2500; i++) await table.put({ policy: "per-key", key: `k${String(i).padStart(5, "0")}`, limit: 1 });
      const calls: string[] = [];
      let pages = 0;
      const changing = counted(table, calls, {
        versionedPages,
        page: async (policy, cursor, count) => {
          calls.push("page");
          const page = await table.page(policy, cursor, count);
          // After the first page: a change to an override it already answered, and a new one it will not see again.
          if (policy === "per-key" && pages++ === 0) {
            await table.put({ policy: "per-key", key: "k00000", limit: 99 });
            await table.delete("per-key", undefined, "k00001");
          }
          return page;
        },
      });
      const overrides = fresh(changing);
      await overrides.resolve([window], "k");
      expect(overrides.find("per-key", "k00000")?.limit).toBe(99);
      expect(overrides.find("per-key", "k00001")).toBeUndefined();
      expect(overrides.find("per-key", "k02499")?.limit).toBe(1);
      expect(calls).toEqual(versionedPages ? ["versions", "page", "page", "page", "changes"] : ["versions", "versions", "page", "page", "page", "changes"]);
    }
  });

  it("a first page without its version where one was promised (an object of an earlier release, mid-deploy) is read as before", async () => {
    const table = new MemoryOverrideTable();
    await table.put({ policy: "per-key", key: "k", limit: 3 });
    const calls: string[] = [];
    const older = counted(table, calls, {
      versionedPages: true,
      page: async (policy, cursor, count) => {
        calls.push("page");
        const { version: _dropped, ...page } = await table.page(policy, cursor, count);
        return page;
      },
    });
    const overrides = fresh(older);
    expect((await overrides.resolve([window], "k"))[0]!.limit).toBe(3);
    expect(calls).toEqual(["versions", "page", "versions", "page", "changes"]);
  });
});

describe("the memory store's table", () => {
  it(`holds at most ${MAX_OVERRIDES_PER_POLICY} per policy, replacing existing keys`, async () => {
    const table = new MemoryOverrideTable();
    for (let i = 0; i < MAX_OVERRIDES_PER_POLICY; i++) await table.put({ policy: "per-key", key: `k${i}`, limit: 1 });
    await expect(table.put({ policy: "per-key", key: "one-more", limit: 1 })).rejects.toThrow(/already has 100000 overrides/);
    await table.put({ policy: "per-key", key: "k5", limit: 2 });
    await table.put({ policy: "smooth", key: "other-policy", limit: 2 });
    let listed = 0;
    let cursor: string | undefined;
    do {
      const page = await table.page("per-key", cursor, 1000);
      listed += page.overrides.length;
      cursor = page.cursor;
    } while (cursor !== undefined);
    expect(listed).toBe(MAX_OVERRIDES_PER_POLICY);
  });

  it("pages in key order after a cursor", async () => {
    const table = new MemoryOverrideTable();
    for (let i = 2499; i >= 0; i--) await table.put({ policy: "p", key: `k${String(i).padStart(5, "0")}`, limit: 1 });
    const first = await table.page("p", undefined, 1000);
    expect(first.overrides.map((one) => one.key).slice(0, 3)).toEqual(["k00000", "k00001", "k00002"]);
    const second = await table.page("p", first.cursor, 1000);
    const third = await table.page("p", second.cursor, 1000);
    expect([first.overrides.length, second.overrides.length, third.overrides.length, third.cursor]).toEqual([1000, 1000, 500, undefined]);
    expect(second.overrides[0]!.key).toBe("k01000");
  });

  it("answers the changes after a version: each changed override once, as it is now", async () => {
    const table = new MemoryOverrideTable();
    await table.put({ policy: "p", key: "a", limit: 1 });
    const [since] = await table.versions(["p"]);
    await table.put({ policy: "p", key: "b", limit: 2 });
    await table.put({ policy: "p", key: "b", limit: 3 });
    await table.put({ policy: "p", key: "c", source: "ip", limit: 4 });
    await table.delete("p", undefined, "a");
    const changes = await table.changes("p", since!);
    expect(changes!.version).toBe(since! + 4);
    expect(changes!.put).toEqual([{ policy: "p", key: "c", source: "ip", limit: 4 }, { policy: "p", key: "b", limit: 3 }]);
    expect(changes!.deleted).toEqual(["a"]);
    expect(await table.changes("p", since! + 4)).toEqual({ version: since! + 4, put: [], deleted: [] });
    expect(await table.changes("p", since! + 5)).toBeUndefined(); // ahead of the table: read it whole
  });
});

describe("where the overrides cache logs", () => {
  it("a gateway built with a log hands it the overrides' lines, not the console", async () => {
    const config = parseConfig({
      origin: "http://127.0.0.1:9",
      overridesTtl: "50ms",
      policies: [{ name: "per-key", algorithm: "fixed-window", limit: 10, period: "1m" }],
      routes: [{ match: { path: "/*" }, policies: ["per-key"], key: "ip" }],
    });
    const store = new MemoryStore();
    const logs: Record<string, unknown>[] = [];
    createNodeGateway({ config, limiter: store, log: (entry) => logs.push(entry) });
    // The gateway's cache is the one every part of this process shares for (config, store).
    const overrides = overridesFor(config, store);
    await overrides.resolve([window], "k");
    store.overrides.versions = () => Promise.reject(new Error("store down"));
    await new Promise((resolve) => setTimeout(resolve, 60));
    await overrides.resolve([window], "k");
    expect(logs).toEqual([expect.objectContaining({ event: "overrides-refresh-failed", error: "Error: store down" })]);
  });
});
