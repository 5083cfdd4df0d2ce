import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { warnFromUnits } from "../../../src/core/warning.js";
import { NoticeQueue } from "../../../src/node/serve/notice-queue.js";
import { serveNotify } from "../../../src/node/serve/notify.js";
import { LiveStats } from "../../../src/observe/live-stats.js";
import { observeLimiter } from "../../../src/observe/observed-limiter.js";
import type { Notice } from "../../../src/notify/notifier.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { LocalCache } from "../../../src/local/local-cache.js";

const REJECT = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A webhook on loopback answering `status` (a function of the try), keeping what it was sent. */
async function webhook(status: (attempt: number) => number = () => 204) {
  const notices: Notice[] = [];
  let attempts = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const code = status(++attempts);
      if (code < 300) notices.push(JSON.parse(body) as Notice);
      res.writeHead(code).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, notices, attempts: () => attempts };
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe("warnAt", () => {
  it.each([0, 1, -0.5, 1.5, "0.8", null])("refuses %j naming the field", (warnAt) => {
    expect(() => parsePolicy({ name: "monthly", algorithm: "fixed-window", limit: 10, period: "1h", warnAt }, "policies.monthly")).toThrow(/^policies\.monthly\.warnAt: must be a number between 0 and 1/);
  });

  it("warns from the first use at or past the share, rounded as the user reads it", () => {
    expect(warnFromUnits(0.8, 10)).toBe(8);
    expect(warnFromUnits(0.3, 10)).toBe(3); // 0.3 × 10 is 3.0000000000000004 in binary
    expect(warnFromUnits(0.7, 10)).toBe(7); // and 0.7 × 10 is 7.000000000000001
    expect(warnFromUnits(0.001, 10)).toBe(1);
  });

  const cases: Array<[string, Record<string, unknown>, number]> = [
    ["fixed-window", { algorithm: "fixed-window", limit: 10, period: "1h" }, 8],
    ["sliding-log", { algorithm: "sliding-log", limit: 10, period: "1h" }, 8],
    ["gcra (its burst is the limit)", { algorithm: "gcra", limit: 10, period: "1h" }, 8],
    ["token-bucket", { algorithm: "token-bucket", limit: 10, period: "1h" }, 8],
    ["credits (of its limit)", { algorithm: "credits", limit: 10 }, 8],
  ];
  it.each(cases)("%s: the decision that reaches 80 %% carries it, and every one after, denials included", async (_name, fields, firstWarned) => {
    const policy = parsePolicy({ name: "p", warnAt: 0.8, ...fields }, "policy");
    const store = new MemoryStore();
    const warned: boolean[] = [];
    for (let i = 1; i <= 12; i++) {
      const decision = await store.check("k", [policy], REJECT);
      warned.push(decision.warning === true);
      expect(decision.policies[0]!.warning === true).toBe(decision.warning === true);
    }
    expect(warned.indexOf(true)).toBe(firstWarned - 1);
    expect(warned.slice(firstWarned - 1).every(Boolean)).toBe(true);
  });

  it("a stack warns at the top when any policy does; a peek reports it too; without warnAt nothing is added", async () => {
    const daily = parsePolicy({ name: "daily", algorithm: "fixed-window", limit: 100, period: "1d" }, "policy");
    const minute = parsePolicy({ name: "minute", algorithm: "fixed-window", limit: 4, period: "1m", warnAt: 0.5 }, "policy");
    const store = new MemoryStore();
    await store.check("k", [daily, minute], REJECT);
    const second = await store.check("k", [daily, minute], REJECT);
    expect(second.warning).toBe(true);
    expect(second.policies.map((part) => part.warning ?? false)).toEqual([false, true]);
    expect((await store.peek("k", [daily, minute])).warning).toBe(true);
    expect("warning" in (await store.check("other", [daily], REJECT))).toBe(false);
  });

  it("a local cache's batch admissions carry it as the store's would", async () => {
    const policy = parsePolicy({ name: "p", algorithm: "fixed-window", limit: 100, period: "1h", warnAt: 0.5, local: { share: 0.2 } }, "policy");
    const cache = new LocalCache(new MemoryStore());
    let firstWarned = -1;
    for (let i = 1; i <= 100; i++) {
      const decision = await cache.check("k", [policy], REJECT);
      if (decision.warning && firstWarned < 0) firstWarned = i;
      if (firstWarned > 0) expect(decision.warning).toBe(true);
    }
    // Batches report what the store has debited: never later than the 50th, never before the store passed 50.
    expect(firstWarned).toBeGreaterThan(0);
    expect(firstWarned).toBeLessThanOrEqual(50);
  });

  it("counts warned decisions per policy for spillway_warnings_total, inline policies under one label", async () => {
    const stats = new LiveStats(["monthly"]);
    const store = observeLimiter(new MemoryStore(), stats, "api");
    const monthly = parsePolicy({ name: "monthly", algorithm: "fixed-window", limit: 4, period: "1h", warnAt: 0.5 }, "policy");
    const inline = parsePolicy({ name: "made-up", algorithm: "fixed-window", limit: 2, period: "1h", warnAt: 0.5 }, "policy");
    for (let i = 0; i < 4; i++) await store.check("k", [monthly], REJECT);
    for (let i = 0; i < 3; i++) await store.check("k", [inline], REJECT);
    expect(Object.fromEntries(stats.warnings)).toEqual({ monthly: 3, inline: 3 });
  });
});

describe("notify in the config", () => {
  const policies = [{ name: "monthly", algorithm: "fixed-window", limit: 10, calendar: "month", warnAt: 0.8 }];
  it.each([
    [{ url: "ftp://example.com/hook" }, /^notify\.url: must be an http\(s\) URL/],
    [{ url: "/hook" }, /^notify\.url: must be an absolute http\(s\) URL/],
    [{ url: 42 }, /^notify\.url: must be an http\(s\) URL/],
    [{ url: "https://example.com/hook", events: [] }, /^notify\.events: must be an array/],
    [{ url: "https://example.com/hook", events: ["warning", "warning"] }, /^notify\.events: /],
    [{ url: "https://example.com/hook", events: ["limit"] }, /^notify\.events\.0: must be an array of "warning" and "exhausted"/],
    [{ url: "https://example.com/hook", secret: "x" }, /^notify\.secret: is not a known field/],
  ])("refuses %j naming the field", (notify, message) => {
    expect(() => parseConfig({ policies, notify })).toThrow(message);
  });

  it("defaults to both events", () => {
    expect(parseConfig({ policies, notify: { url: "https://example.com/hook" } }).notify).toEqual({ url: "https://example.com/hook", events: ["warning", "exhausted"] });
  });
});

describe("notices on one process (the memory store)", () => {
  const policy = parsePolicy({ name: "monthly", algorithm: "fixed-window", limit: 5, period: "1h", warnAt: 0.6 }, "policy");

  it("one warning and one exhausted per window under a burst, none for the events left out, none before warnAt", async () => {
    const hook = await webhook();
    const notices = serveNotify(new MemoryStore(), parseConfig({ policies: [], notify: { url: hook.url } }), () => {});
    closers.push(() => notices.close());
    const answers = await Promise.all(Array.from({ length: 50 }, () => notices.limiter.check("acme", [policy], REJECT)));
    expect(answers.filter((answer) => answer.allowed)).toHaveLength(5);
    await until(() => hook.notices.length >= 2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(hook.notices.map((notice) => notice.event).sort()).toEqual(["exhausted", "warning"]);
    expect(hook.notices.find((notice) => notice.event === "warning")).toMatchObject({ key: "acme", policy: "monthly", limit: 5 });

    // Only warnings asked for: a new key's denials send nothing more.
    const onlyWarnings = serveNotify(new MemoryStore(), parseConfig({ policies: [], notify: { url: hook.url, events: ["warning"] } }), () => {});
    closers.push(() => onlyWarnings.close());
    for (let i = 0; i < 2; i++) await onlyWarnings.limiter.check("globex", [policy], REJECT);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hook.notices).toHaveLength(2); // 2 of 5 used: below 60 %
    for (let i = 0; i < 8; i++) await onlyWarnings.limiter.check("globex", [policy], REJECT);
    await until(() => hook.notices.length >= 3);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hook.notices.slice(2).map((notice) => [notice.event, notice.key])).toEqual([["warning", "globex"]]);
  });

  it("a credits top-up lets the balance warn again when it runs low once more", async () => {
    const hook = await webhook();
    const credits = parsePolicy({ name: "prepaid", algorithm: "credits", limit: 10, warnAt: 0.5 }, "policy");
    const notices = serveNotify(new MemoryStore(), parseConfig({ policies: [], notify: { url: hook.url, events: ["warning"] } }), () => {});
    closers.push(() => notices.close());
    await notices.limiter.check("acme", [credits], { ...REJECT, cost: 6 });
    await until(() => hook.notices.length >= 1);
    await notices.limiter.check("acme", [credits], REJECT);
    await notices.limiter.credits("acme", credits, { add: 10 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hook.notices).toHaveLength(1);
    await notices.limiter.check("acme", [credits], { ...REJECT, cost: 8 });
    await until(() => hook.notices.length >= 2);
    expect(hook.notices.map((notice) => notice.remaining)).toEqual([4, 5]);
  });

  it("a reload's notify applies from the next decision; without one nothing is sent", async () => {
    const hook = await webhook();
    const notices = serveNotify(new MemoryStore(), parseConfig({ policies: [] }), () => {});
    closers.push(() => notices.close());
    for (let i = 0; i < 4; i++) await notices.limiter.check("acme", [policy], REJECT);
    notices.configure(parseConfig({ policies: [], notify: { url: hook.url } }));
    await notices.limiter.check("acme", [policy], REJECT);
    await until(() => hook.notices.length >= 1);
    expect(hook.notices.map((notice) => notice.event)).toEqual(["warning"]);
  });
});

describe("the notice queue", () => {
  const notice: Notice = { event: "warning", key: "acme", policy: "monthly", limit: 10, remaining: 2, resetMs: 1000, at: 0 };

  it("retries a webhook that fails for a while, then delivers once", async () => {
    const hook = await webhook((attempt) => (attempt < 3 ? 503 : 204));
    const queue = new NoticeQueue({ retryDelayMs: 10, log: () => {} });
    queue.send(notice, { url: hook.url, events: ["warning"] });
    await until(() => queue.sent === 1);
    expect(hook.attempts()).toBe(3);
    expect(hook.notices).toHaveLength(1);
  });

  it("a dead webhook costs a log line per notice, a 4xx is not retried, a full queue drops with its reason", async () => {
    const lines: string[] = [];
    const dead = await webhook(() => 500);
    const queue = new NoticeQueue({ retryDelayMs: 5, attempts: 3, log: (line) => lines.push(line) });
    queue.send(notice, { url: dead.url, events: ["warning"] });
    await until(() => queue.dropped === 1);
    expect(dead.attempts()).toBe(3);
    expect(JSON.parse(lines[0]!)).toMatchObject({ event: "notify-dropped", notice: "warning", key: "acme", reason: "the webhook answered 500 (3 tries)" });

    const refusing = await webhook(() => 400);
    queue.send(notice, { url: refusing.url, events: ["warning"] });
    await until(() => queue.dropped === 2);
    expect(refusing.attempts()).toBe(1);

    const small = new NoticeQueue({ maxQueued: 2, concurrency: 1, log: (line) => lines.push(line) });
    for (let i = 0; i < 4; i++) small.send(notice, { url: refusing.url, events: ["warning"] });
    expect(small.dropped).toBe(1); // one under way, two waiting, the fourth dropped
    expect(lines.at(-1)).toMatch(/the queue is full \(2 waiting\)/);
    await until(() => small.dropped === 4);
  });
});

describe("the webhook's URL: credentials and redirects (issue 45, 13 and 14)", () => {
  /** A webhook on loopback that keeps each request's Authorization, answering `answer`. */
  async function receiver(answer: (res: http.ServerResponse) => void = (res) => void res.writeHead(204).end()) {
    const seen: Array<{ authorization: string | undefined; notice: Notice }> = [];
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        seen.push({ authorization: req.headers.authorization, notice: JSON.parse(body) as Notice });
        answer(res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return { port: (server.address() as AddressInfo).port, seen };
  }
  const policy = parsePolicy({ name: "monthly", algorithm: "fixed-window", limit: 2, period: "1h", warnAt: 0.5 }, "policy");

  it("user:password@ in notify.url is sent as Authorization: Basic, taken out of the URL, never in a log line", async () => {
    const hook = await receiver();
    const config = parseConfig({ policies: [], notify: { url: `http://ops:s3cr%C3%A9t%40x@127.0.0.1:${hook.port}/hook` } });
    expect(config.notify).toEqual({ url: `http://127.0.0.1:${hook.port}/hook`, events: ["warning", "exhausted"], authorization: `Basic ${Buffer.from("ops:s3crét@x").toString("base64")}` });
    const lines: string[] = [];
    const notices = serveNotify(new MemoryStore(), config, (line) => lines.push(line));
    closers.push(() => notices.close());
    await notices.limiter.check("acme", [policy], REJECT);
    await until(() => hook.seen.length >= 1);
    expect(hook.seen.map((one) => [one.authorization, one.notice.event])).toEqual([[`Basic ${Buffer.from("ops:s3crét@x").toString("base64")}`, "warning"]]);
    expect(lines).toEqual([]);
  });

  it("a URL that holds a password is never quoted: not in a config error, not in a drop line", async () => {
    expect(() => parseConfig({ policies: [], notify: { url: "ftp://ops:hunter2@example.com/hook" } })).toThrow(/^notify\.url: must be an http\(s\) URL, got "ftp:\/\/\*\*\*@example\.com\/hook"$/);
    const lines: string[] = [];
    const queue = new NoticeQueue({ attempts: 1, log: (line) => lines.push(line) });
    // A redirect that hands its own credentials on: the drop line names where, without them.
    const hook = await receiver((res) => void res.writeHead(307, { location: "http://ops:hunter2@10.0.0.1/x" }).end());
    queue.send({ event: "warning", key: "acme", policy: "monthly", limit: 2, remaining: 1, resetMs: 1000, at: 0 }, parseConfig({ policies: [], notify: { url: `http://ops:hunter2@127.0.0.1:${hook.port}/hook` } }).notify!);
    await until(() => queue.dropped === 1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain("hunter2");
    expect(JSON.parse(lines[0]!).reason).toBe("the webhook answered 307, a redirect to http://***@10.0.0.1/x; redirects are not followed: set notify.url to the final URL (1 try)");
  });

  it.each([301, 302, 303, 307, 308])("a %i is not followed (nothing reaches where it points), not retried, and logged as a failed delivery", async (status) => {
    const elsewhere = await receiver();
    const hook = await receiver((res) => void res.writeHead(status, { location: `http://127.0.0.1:${elsewhere.port}/stolen` }).end());
    const lines: string[] = [];
    const notices = serveNotify(new MemoryStore(), parseConfig({ policies: [], notify: { url: `http://127.0.0.1:${hook.port}/hook`, events: ["warning"] } }), (line) => lines.push(line));
    closers.push(() => notices.close());
    await notices.limiter.check("acme", [policy], REJECT);
    await until(() => lines.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hook.seen).toHaveLength(1);
    expect(elsewhere.seen).toEqual([]);
    expect(JSON.parse(lines[0]!)).toMatchObject({ event: "notify-dropped", notice: "warning", key: "acme", reason: `the webhook answered ${status}, a redirect to http://127.0.0.1:${elsewhere.port}/stolen; redirects are not followed: set notify.url to the final URL (1 try)` });
  });
});
