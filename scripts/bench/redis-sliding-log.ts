// bench:redis's sliding-log section: what one decision costs on a key whose log is full, at
// limit 1k, 10k and 100k. A log is filled by `limit` admissions spread evenly over the
// period, through the store on the client clock (pipelined: a log keeps at most 65 live
// buckets, so the fill is cheap), then decisions continue the same trace, one per step: a
// key held at its limit rate, admitting as old admissions stop counting. Redis time per decision is INFO commandstats' FCALL usec;
// the memory store's and the Durable Object's cost is KeyState.check in this process
// (and the DO's JSON.stringify of the state it writes to SQLite).
import type { Redis } from "ioredis";
import { KeyState, type Policy, type StoredState, parsePolicy } from "../../src/core/index.js";
import { RedisStore } from "../../src/redis.js";
import { connect } from "./redis-contenders.js";
import { redisUsec, resetRedisStats } from "./redis-stats.js";

export interface SlidingLogOptions {
  url: string;
  runId: string;
  limits: readonly number[];
  periodMs: number;
  /** Each measurement (Redis, then Node) stops after this long or after `limit` decisions. */
  budgetMs: number;
}

export interface SlidingLogRow {
  limit: number;
  /** Entries in the stored state after the fill. */
  entries: number;
  /** Characters of the stored state (what GET reads and the reply carries back). */
  stateChars: number;
  redisCalls: number;
  redisAdmitted: number;
  redisUsPerDecision: number;
  nodeCalls: number;
  /** KeyState.check alone (the memory store's decision). */
  nodeCheckUs: number;
  /** KeyState.check and JSON.stringify of every state it changed (the Durable Object's write). */
  nodeCheckAndJsonUs: number;
}

const CHECK = { cost: 1, mode: "reject", maxWaitMs: 0 } as const;

/** The state `limit` admissions of cost 1 at startMs + i·stepMs leave, built by the core. */
function filledState(policy: Policy, startMs: number, stepMs: number): StoredState {
  const keyState = new KeyState();
  let stored: StoredState | undefined;
  for (let i = 0; i < policy.limit; i++) {
    const { decision, changes } = keyState.check([policy], startMs + i * stepMs, CHECK);
    if (!decision.allowed) throw new Error(`the fill was refused at admission ${i}`);
    stored = changes.get(policy.name)?.stored ?? stored;
  }
  if (!stored) throw new Error("the fill left no state");
  return stored;
}

/** Admissions in flight at once while filling a log through the store. */
const FILL_BATCH = 512;

async function measureRedis(admin: Redis, client: Redis, options: SlidingLogOptions, policy: Policy, startMs: number, stepMs: number) {
  const prefix = `bench:${options.runId}:sliding-log:${policy.limit}:`;
  const key = "full";
  let nowMs = startMs;
  // A full old-style log takes far longer than the store's default 50 ms per call.
  const store = new RedisStore({ client, keyPrefix: prefix, clock: "client", clockMs: () => nowMs, timeoutMs: 60_000, coalesceWrites: false });
  // The store reads its clock when a call starts, so calls started in trace order go out in it.
  for (let i = 0; i < policy.limit; i += FILL_BATCH) {
    const batch: Promise<{ allowed: boolean }>[] = [];
    for (let j = i; j < Math.min(policy.limit, i + FILL_BATCH); j++) {
      nowMs = startMs + j * stepMs;
      batch.push(store.check(key, [policy], CHECK));
    }
    if (!(await Promise.all(batch)).every((decision) => decision.allowed)) throw new Error("Redis refused part of the fill");
  }
  // What GET reads and the reply carries back: the one key under this run's prefix.
  const [stateKey] = await client.keys(`${prefix}*`);
  const stateChars = stateKey ? await client.strlen(stateKey) : 0;
  nowMs = startMs + policy.limit * stepMs;
  await resetRedisStats(admin);
  const deadlineMs = performance.now() + options.budgetMs;
  let calls = 0;
  let admitted = 0;
  while (calls < policy.limit && (calls < 5 || performance.now() < deadlineMs)) {
    if ((await store.check(key, [policy], CHECK)).allowed) admitted++;
    calls++;
    nowMs += stepMs;
  }
  const usec = await redisUsec(admin);
  await store.reset(key, [policy]);
  return { calls, admitted, usPerDecision: usec / calls, stateChars };
}

function measureNode(options: SlidingLogOptions, policy: Policy, stored: StoredState, startMs: number, stepMs: number, withJson: boolean) {
  const keyState = new KeyState([[policy.name, stored]]);
  const policies = [policy];
  let nowMs = startMs + policy.limit * stepMs;
  let calls = 0;
  let jsonChars = 0;
  const startedMs = performance.now();
  const deadlineMs = startedMs + options.budgetMs;
  while (calls < policy.limit && (calls < 5 || performance.now() < deadlineMs)) {
    const { changes } = keyState.check(policies, nowMs, CHECK);
    if (withJson) for (const change of changes.values()) if (change) jsonChars += JSON.stringify(change.stored).length;
    calls++;
    nowMs += stepMs;
  }
  return { calls, us: ((performance.now() - startedMs) * 1000) / calls, jsonChars };
}

export async function runSlidingLog(options: SlidingLogOptions, log: (line: string) => void): Promise<SlidingLogRow[]> {
  const admin = await connect(options.url);
  const client = await connect(options.url);
  const rows: SlidingLogRow[] = [];
  try {
    for (const limit of options.limits) {
      const policy = parsePolicy({ name: "bench", algorithm: "sliding-log", limit, period: options.periodMs }, "policy");
      const stepMs = options.periodMs / limit;
      const startMs = Math.floor(Date.now() / options.periodMs) * options.periodMs;
      const stored = filledState(policy, startMs, stepMs);
      const entries = stored.algorithm === "sliding-log" ? stored.state.entries.length : 0;
      const redis = await measureRedis(admin, client, options, policy, startMs, stepMs);
      const node = measureNode(options, policy, stored, startMs, stepMs, false);
      const nodeJson = measureNode(options, policy, stored, startMs, stepMs, true);
      const row: SlidingLogRow = {
        limit,
        entries,
        stateChars: redis.stateChars,
        redisCalls: redis.calls,
        redisAdmitted: redis.admitted,
        redisUsPerDecision: redis.usPerDecision,
        nodeCalls: node.calls,
        nodeCheckUs: node.us,
        nodeCheckAndJsonUs: nodeJson.us,
      };
      log(
        `sliding-log limit ${limit}: ${entries} entries (${row.stateChars} chars); Redis ${row.redisUsPerDecision.toFixed(1)} µs/decision over ${redis.calls} decisions (${redis.admitted} admitted); ` +
          `KeyState.check ${row.nodeCheckUs.toFixed(2)} µs, with the DO's JSON ${row.nodeCheckAndJsonUs.toFixed(2)} µs (${node.calls} decisions)`,
      );
      rows.push(row);
    }
  } finally {
    admin.disconnect();
    client.disconnect();
  }
  return rows;
}

const us = (value: number) => (value >= 100 ? Math.round(value).toLocaleString("en-US") : value.toFixed(1));

/** Issue 12's goal: a decision's Redis time must not grow with the log (at most 50 µs at limit 100,000). */
export const SLIDING_LOG_GOAL_US = 50;

export function slidingLogGoal(rows: readonly SlidingLogRow[]): string[] {
  const largest = rows.reduce((top, row) => (row.limit > top.limit ? row : top), rows[0]!);
  const met = largest.redisUsPerDecision <= SLIDING_LOG_GOAL_US;
  return [`Goal: at most ${SLIDING_LOG_GOAL_US} µs of Redis time per decision at limit ${largest.limit.toLocaleString("en-US")} — this run: ${us(largest.redisUsPerDecision)} µs: **${met ? "met" : "missed"}**.`];
}

export function slidingLogTable(rows: readonly SlidingLogRow[]): string[] {
  return [
    "| limit (admissions in the log) | entries stored | state size (chars) | Redis µs/decision (FCALL) | decisions measured (admitted) | KeyState.check µs (memory store) | + JSON.stringify µs (Durable Object) |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...rows.map(
      (row) =>
        `| ${row.limit.toLocaleString("en-US")} | ${row.entries.toLocaleString("en-US")} | ${row.stateChars.toLocaleString("en-US")} | ${us(row.redisUsPerDecision)} | ${row.redisCalls.toLocaleString("en-US")} (${row.redisAdmitted.toLocaleString("en-US")}) | ${us(row.nodeCheckUs)} | ${us(row.nodeCheckAndJsonUs)} |`,
    ),
  ];
}
