import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { serveNotify } from "../../../src/node/serve/notify.js";
import type { Notice } from "../../../src/notify/notifier.js";
import { MemoryStore } from "../../../src/stores/memory.js";

// Issue 45, attack 5 and 6: a flood of keys must not crowd a real key's notices out of the
// queue for good, nor make the memory store's claims cost more or forget a key's window.
const REJECT = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A webhook on loopback that holds every POST until `open()`, then answers each 204 at once. */
async function heldWebhook() {
  const notices: Notice[] = [];
  const waiting: Array<() => void> = [];
  let opened = false;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const answer = () => {
        notices.push(JSON.parse(body) as Notice);
        res.writeHead(204).end();
      };
      if (opened) answer();
      else waiting.push(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    notices,
    open() {
      opened = true;
      for (const answer of waiting.splice(0)) answer();
    },
  };
}

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

// One request warns (50 % of 2), the third is refused: a flood key costs three requests.
const anon = parsePolicy({ name: "anon", algorithm: "fixed-window", limit: 2, period: "1h", warnAt: 0.5 }, "policy");
const monthly = parsePolicy({ name: "monthly", algorithm: "fixed-window", limit: 2, period: "1h", warnAt: 0.5 }, "policy");

async function flood(limiter: { check: MemoryStore["check"] }, policy: typeof anon, keys: number): Promise<void> {
  for (let i = 0; i < keys; i++) await limiter.check(`flood-${i}`, [policy], REJECT);
}

describe("a flood of keys and the notice queue (1,000 notices, 4 POSTs at a time)", () => {
  it("another policy's notices are not pushed out nor kept waiting behind the flood", async () => {
    const hook = await heldWebhook();
    const lines: string[] = [];
    const notices = serveNotify(new MemoryStore(), parseConfig({ policies: [], notify: { url: hook.url } }), (line) => lines.push(line));
    closers.push(() => notices.close());
    await flood(notices.limiter, anon, 3000);
    for (let i = 0; i < 3; i++) await notices.limiter.check("acme", [monthly], REJECT);
    await until(() => notices.queue.size >= 1000);
    hook.open();
    await until(() => hook.notices.filter((notice) => notice.key === "acme").length >= 2);
    const order = hook.notices.map((notice) => notice.key);
    expect(hook.notices.filter((notice) => notice.key === "acme").map((notice) => notice.event)).toEqual(["warning", "exhausted"]);
    // Served in turn with the flood's line: among the first few POSTs once the webhook answers, not after 1,000.
    expect(order.indexOf("acme")).toBeLessThan(12);
    expect(lines.length).toBeGreaterThan(1000); // the flood's own notices were dropped, each with its line
  }, 30_000);

  it("on the flood's own policy a dropped notice gives back its claim: the key's next decision sends it", async () => {
    const hook = await heldWebhook();
    const lines: string[] = [];
    // The same queue at 50 notices, so that draining it takes a moment, not 1,000 POSTs.
    const notices = serveNotify(new MemoryStore(), parseConfig({ policies: [], notify: { url: hook.url } }), (line) => lines.push(line), { maxQueued: 50 });
    closers.push(() => notices.close());
    await flood(notices.limiter, monthly, 150);
    await notices.limiter.check("acme", [monthly], REJECT);
    await until(() => lines.some((line) => line.includes('"key":"acme"')));
    expect(JSON.parse(lines.find((line) => line.includes('"key":"acme"'))!)).toEqual({ level: "warn", event: "notify-dropped", notice: "warning", policy: "monthly", key: "acme", reason: "the queue is full (50 waiting)", claim: "given back" });
    hook.open();
    await until(() => notices.queue.size === 0);
    // The flood is over; acme's next decisions in the same window: its warning, then its first denial.
    for (let i = 0; i < 2; i++) await notices.limiter.check("acme", [monthly], REJECT);
    await until(() => hook.notices.filter((notice) => notice.key === "acme").length >= 2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hook.notices.filter((notice) => notice.key === "acme").map((notice) => [notice.event, notice.remaining])).toEqual([
      ["warning", 0],
      ["exhausted", 0],
    ]);
  }, 30_000);
});

describe("the memory store's notice claims past 100,000 live", () => {
  const ttlMs = 3_600_000;
  /** `keys` keys decided, each with its two notices claimed as the notifier claims them: 2 × keys live claims. */
  async function fill(store: MemoryStore, keys: number, prefix: string): Promise<void> {
    for (let i = 0; i < keys; i++) {
      await store.check(`${prefix}-${i}`, [monthly], REJECT);
      await store.claimNotice(`${prefix}-${i}`, "warning:monthly", ttlMs);
      await store.claimNotice(`${prefix}-${i}`, "exhausted:monthly", ttlMs);
    }
  }

  it("a key is warned once per window with 100,002 other claims live (a second process's notifier, or one that forgot, asks again)", async () => {
    const hook = await heldWebhook();
    hook.open();
    const store = new MemoryStore({ maxKeys: 200_000 });
    const config = parseConfig({ policies: [], notify: { url: hook.url, events: ["warning"] } });
    const first = serveNotify(store, config, () => {});
    closers.push(() => first.close());
    await first.limiter.check("acme", [monthly], REJECT);
    await until(() => hook.notices.length === 1);
    await fill(store, 50_001, "other");
    // A notifier that has not seen acme's claim (its own memory is a cache): the store answers.
    const second = serveNotify(store, config, () => {});
    closers.push(() => second.close());
    await second.limiter.check("acme", [monthly], REJECT);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(hook.notices.map((notice) => [notice.event, notice.key])).toEqual([["warning", "acme"]]);
  }, 60_000);

  it("a claim's work does not grow with the claims held: Map entries walked, 2,000 claims held against 100,002", async () => {
    // Counts every step of every Map iteration in this process while it runs (a for…of over a Map included).
    const iteratorProto = Object.getPrototypeOf(new Map().entries()) as { next: (this: unknown) => unknown };
    const next = iteratorProto.next;
    let steps = 0;
    const stepsOf = async (run: () => Promise<unknown>): Promise<number> => {
      steps = 0;
      iteratorProto.next = function (this: unknown) {
        steps++;
        return next.call(this);
      };
      try {
        await run();
      } finally {
        iteratorProto.next = next;
      }
      return steps;
    };
    const small = new MemoryStore({ maxKeys: 200_000 });
    await fill(small, 1000, "other");
    const large = new MemoryStore({ maxKeys: 200_000 });
    await fill(large, 50_001, "other");
    // What is measured: 100 new keys, each decided and its two notices claimed.
    const atSmall = await stepsOf(() => fill(small, 100, "new"));
    const atLarge = await stepsOf(() => fill(large, 100, "new"));
    expect(await stepsOf(async () => [...new Map([[1, 1]])])).toBeGreaterThan(0); // the count sees a walk
    expect(atLarge).toBe(atSmall);
    expect(atLarge / 300).toBeLessThan(4);
  }, 60_000);
});
