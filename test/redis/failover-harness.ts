// What the two failover tests share: a `spillway serve`-like server over a RedisStore, a
// steady load of decisions recorded one by one, and the reads made around the failover.
import { parseConfig } from "../../src/config/config.js";
import { type RunningServer, startServer } from "../../src/node/serve/server.js";
import type { RedisStore } from "../../src/stores/redis/store.js";
import { STORE_UNAVAILABLE_TYPE } from "../../src/core/wire.js";

export const LEASE_MS = 3000;

/**
 * counted: the 30-before / 20-after policy; open and closed: the load's failModes; leases:
 * concurrency. counted is GCRA, whose 50 refill one per 72 s, so a test (60 s at most) counts
 * exactly 50: an hour's fixed window is epoch-aligned, and a run that straddled the hour (CI at
 * 06:59:59) started the counts afresh and read as counts lost in the failover.
 */
export const failoverConfig = parseConfig({
  policies: [
    { name: "counted", algorithm: "gcra", limit: 50, period: "1h", failMode: "closed" },
    { name: "open", algorithm: "gcra", limit: 1_000_000, period: "1s", failMode: "open" },
    { name: "closed", algorithm: "gcra", limit: 1_000_000, period: "1s", failMode: "closed" },
    { name: "leases", algorithm: "concurrency", limit: 2, lease: `${LEASE_MS}ms`, failMode: "closed" },
  ],
});

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function serveStore(store: RedisStore): Promise<RunningServer> {
  return startServer({ config: failoverConfig, limiter: store, port: 0, token: "t" });
}

export interface Answer {
  status: number;
  body: Record<string, unknown>;
  failedOpen: boolean;
}

/** A Spillway API call; a request still unanswered after 5 s is a hang (status 0). */
export async function call(server: RunningServer, path: string, body: Record<string, unknown>): Promise<Answer> {
  try {
    const response = await fetch(`${server.url}/v1/${path}`, { method: "POST", headers: { authorization: "Bearer t" }, body: JSON.stringify(body), signal: AbortSignal.timeout(5000) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown>, failedOpen: response.headers.get("spillway-failed-open") === "true" };
  } catch {
    return { status: 0, body: {}, failedOpen: false };
  }
}

/**
 * The first acquire after a failover that the guard has decided: while it still verifies the
 * servers (it reads every master's marker, the dead one's included until the Cluster drops it)
 * a grant waits up to its waitMs and answers 503 (failMode closed): no lease either way. The
 * fence's lease length starts when the loss is seen, so the first decided answer falls inside it.
 */
export async function firstDecidedAcquire(server: RunningServer, key: string): Promise<{ answer: Answer; unavailable: number }> {
  for (let unavailable = 0; ; unavailable++) {
    const answer = await call(server, "acquire", { key, policy: "leases" });
    if (answer.status !== 503 || unavailable === 10) return { answer, unavailable };
  }
}

export interface Sample extends Answer {
  policy: "open" | "closed";
  startedMs: number;
  tookMs: number;
}

/** Three loops of /v1/check, alternating the failOpen and failClosed policies, until stopped. */
export function steadyLoad(server: RunningServer): { stop(): Promise<Sample[]> } {
  const samples: Sample[] = [];
  let running = true;
  const loop = async (index: number) => {
    for (let n = 0; running; n++) {
      const policy = n % 2 === 0 ? "open" : "closed";
      const startedMs = performance.now();
      const answer = await call(server, "check", { key: `load-${index}-${n % 7}`, policy });
      samples.push({ ...answer, policy, startedMs, tookMs: performance.now() - startedMs });
      await sleep(10);
    }
  };
  const loops = [0, 1, 2].map(loop);
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return samples;
    },
  };
}

/** Milliseconds from `sinceMs` until the store decides on `key` again (a peek answers, not an error). */
export async function untilDecidesAgain(store: RedisStore, sinceMs: number, key = "probe", giveUpMs = 20_000): Promise<number> {
  for (;;) {
    try {
      await store.peek(key, [failoverConfig.policies.find((policy) => policy.name === "closed")!]);
      return performance.now() - sinceMs;
    } catch {
      if (performance.now() - sinceMs > giveUpMs) return Number.POSITIVE_INFINITY;
      await sleep(20);
    }
  }
}

/** Checks of cost 1 on `key` until one is denied: how many were admitted (503s during a gap are retried). */
export async function admitUntilDenied(server: RunningServer, key: string, most = 100): Promise<number> {
  let admitted = 0;
  for (let tries = 0; tries < most * 3; tries++) {
    const answer = await call(server, "check", { key, policy: "counted" });
    if (answer.status === 429) return admitted;
    if (answer.status === 200) admitted++;
    else await sleep(50);
    if (admitted > most) break;
  }
  return admitted;
}

/** What the load saw, for the assertions: every status, the hangs, what failMode answered. */
export function summarize(samples: readonly Sample[]) {
  const unavailable = samples.filter((sample) => sample.status === 503 && sample.body.type === STORE_UNAVAILABLE_TYPE);
  return {
    statuses: [...new Set(samples.map((sample) => sample.status))].sort(),
    hangs: samples.filter((sample) => sample.status === 0).length,
    failedOpen: samples.filter((sample) => sample.policy === "open" && sample.status === 200 && sample.failedOpen).length,
    closedUnavailable: unavailable.filter((sample) => sample.policy === "closed").length,
    openRefused: samples.filter((sample) => sample.policy === "open" && sample.status !== 200).length,
    slowestMs: Math.round(Math.max(...samples.map((sample) => sample.tookMs))),
  };
}
