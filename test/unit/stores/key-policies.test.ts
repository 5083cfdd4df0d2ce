import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../src/core/policy.js";
import { KeyPolicies, KeyTable } from "../../../src/stores/key-table.js";
import { LocalKey, NOTHING_TO_PERSIST } from "../../../src/stores/local-key.js";

// A memory store key's policies by name (key-table.ts): a short list for the usual one or two,
// a Map past eight (a rate limit service domain holds one per counter). Read like a Map either
// way, and the table's count of (key, policy) states follows every change.

const policy = (name: string, limit = 5) => parsePolicy({ name, limit, period: "1m" }, "policy");

describe("KeyPolicies", () => {
  it("reads like a Map below and above eight policies, in the order first set, a replaced policy in place", () => {
    const policies = new KeyPolicies();
    const names = Array.from({ length: 20 }, (_, i) => `p${i}`);
    for (const [count, name] of names.entries()) {
      expect(policies.set(policy(name))).toBe(true);
      expect(policies.size).toBe(count + 1);
      // Every one set so far is found, whichever form holds them now.
      for (const known of names.slice(0, count + 1)) expect(policies.get(known)?.name).toBe(known);
      expect(policies.has(`p${count + 1}`)).toBe(false);
    }
    for (const size of [3, 20]) {
      const some = new KeyPolicies();
      for (const name of names.slice(0, size)) some.set(policy(name));
      expect(some.set(policy("p1", 9))).toBe(false); // the policy as it is now wins
      expect(some.get("p1")?.limit).toBe(9);
      expect([...some].map(([name]) => name)).toEqual(names.slice(0, size));
      // A delete while iterating leaves the walk whole.
      const walked = [];
      for (const [name] of some) {
        walked.push(name);
        some.delete(name);
      }
      expect(walked).toEqual(names.slice(0, size));
      expect(some.size).toBe(0);
      expect(some.delete("p0")).toBe(false);
    }
  });

  it("keeps the table's count of states through remember and forget", () => {
    const table = new KeyTable();
    const entry = table.add("alice", new LocalKey([], NOTHING_TO_PERSIST));
    table.remember(entry, [policy("a"), policy("b")]);
    table.remember(entry, [policy("b", 7), policy("c")]);
    expect(table.states).toBe(3);
    for (let i = 0; i < 12; i++) table.remember(entry, [policy(`x${i}`)]);
    expect(table.states).toBe(15);
    table.forget(entry, "b");
    table.forget(entry, "b");
    expect(table.states).toBe(14);
    expect(entry.policies.get("b")).toBeUndefined();
    table.delete(entry);
    expect(table.states).toBe(0);
  });
});
