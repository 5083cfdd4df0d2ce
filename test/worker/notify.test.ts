import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import type { Env } from "../../src/worker/env.js";
import { createWorker } from "../../src/worker/index.js";
import { TOKEN, checkWith, uniqueKey } from "./helpers.js";

const webhook = inject("webhook");
const config = {
  policies: [{ name: "monthly", algorithm: "fixed-window", limit: 5, calendar: "month", timezone: "America/New_York", warnAt: 0.6 }],
  notify: { url: `${webhook}/hook` },
};

async function noticesOf(key: string, count: number): Promise<Array<{ event: string; key: string; policy: string; remaining: number }>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const notices = (await (await fetch(`${webhook}/notices?key=${encodeURIComponent(key)}`)).json()) as Array<{ event: string; key: string; policy: string; remaining: number }>;
    if (notices.length >= count || Date.now() > deadline) return notices;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("warnAt and notify on the Worker (Durable Objects)", () => {
  const workerEnv = { LIMITER: env.LIMITER as unknown as Env["LIMITER"], SPILLWAY_TOKEN: TOKEN, SPILLWAY_LOG_DENIALS: "false" } as Env;

  it("flags from the 3rd decision on (60 % of 5), with Spillway-Warning; one warning and one exhausted notice from two isolates' workers", async () => {
    const key = uniqueKey("notify");
    // Two Worker instances: two isolates' worth of caches, one Durable Object per key between them.
    const workers = [createWorker(config), createWorker(config)];
    const answers = [];
    for (let i = 0; i < 8; i++) {
      const response = await checkWith(workers[i % 2]!, workerEnv, key, "monthly");
      const body = (await response.json()) as { warning?: boolean };
      answers.push([response.status, body.warning === true, response.headers.get("spillway-warning")]);
    }
    expect(answers).toEqual([
      [200, false, null],
      [200, false, null],
      [200, true, '"monthly"'],
      [200, true, '"monthly"'],
      [200, true, '"monthly"'],
      [429, true, '"monthly"'],
      [429, true, '"monthly"'],
      [429, true, '"monthly"'],
    ]);
    const notices = await noticesOf(key, 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const all = await noticesOf(key, 2);
    expect(all.map((notice) => notice.event).sort()).toEqual(["exhausted", "warning"]);
    expect(notices.find((notice) => notice.event === "warning")).toMatchObject({ key, policy: "monthly", remaining: 2 });
  });

  it("a costed gateway route (peek, then debit): its refusals send exhausted, as /v1/check's do (issue 45, newcomer 1)", async () => {
    const user = uniqueKey("costed");
    const worker = createWorker({
      ...config,
      origin: webhook,
      routes: [{ match: { path: "/llm/*" }, key: "header:x-user", policies: ["monthly"], cost: { responseJson: "usage.total_tokens" } }],
    });
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const ctx = createExecutionContext();
      const response = await worker.fetch(new Request("https://gateway.test/llm/chat", { headers: { "x-user": user } }), workerEnv as never, ctx);
      await response.arrayBuffer();
      await waitOnExecutionContext(ctx);
      statuses.push(response.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    await noticesOf(`header:x-user:${user}`, 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const all = await noticesOf(`header:x-user:${user}`, 2);
    expect(all.map((notice) => notice.event).sort()).toEqual(["exhausted", "warning"]);
  });

  it("a webhook that answers 307 is not followed: the notice never reaches where it points (issue 45, 14)", async () => {
    const key = uniqueKey("moved");
    const worker = createWorker({ ...config, notify: { url: `${webhook}/moved` } });
    const logged: string[] = [];
    const warn = console.warn;
    console.warn = (line: string) => void logged.push(line);
    try {
      for (let i = 0; i < 3; i++) expect((await checkWith(worker, workerEnv, key, "monthly")).status).toBe(200);
      const deadline = Date.now() + 5000;
      while (logged.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      console.warn = warn;
    }
    expect(await noticesOf(key, 0)).toEqual([]);
    expect(logged.map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([
      { level: "warn", event: "notify-dropped", notice: "warning", policy: "monthly", key, reason: "the webhook answered 307, a redirect to /hook; redirects are not followed: set notify.url to the final URL (1 try)" },
    ]);
  });
});
