import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../src/core/policy.js";
import { type Notice, Notifier } from "../../../src/notify/notifier.js";
import { NotifyingLimiter } from "../../../src/notify/notifying-limiter.js";
import { MemoryStore } from "../../../src/stores/memory.js";

// A refund (a negative debit) gives units back: it crosses no threshold, so it sends no notice,
// even where the key is still past warnAt and no claim holds the notice back.
describe("NotifyingLimiter and refunds", () => {
  it("a refund sends no warning; the next spend past warnAt still does", async () => {
    const store = new MemoryStore();
    const sent: Notice[] = [];
    const notifier = new Notifier({ config: () => ({ url: "http://127.0.0.1:1/hook", events: ["warning", "exhausted"] as const }), claim: async () => true, send: (notice) => sent.push(notice) });
    const limiter = new NotifyingLimiter(store, notifier);
    const monthly = parsePolicy({ name: "monthly", algorithm: "fixed-window", limit: 10, period: "1h", warnAt: 0.8 }, "policy");
    // Spent before this notifier saw the key (another process, or before a restart).
    await store.debit("k", [monthly], 10);
    const refunded = await limiter.debit("k", [monthly], -1);
    expect(refunded).toMatchObject({ remaining: 1, warning: true });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sent).toEqual([]);
    await limiter.debit("k", [monthly], 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sent.map((notice) => notice.event)).toEqual(["warning"]);
  });
});
