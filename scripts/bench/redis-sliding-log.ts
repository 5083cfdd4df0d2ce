// bench:redis's sliding-log section: what one decision costs on a key whose log is full, at
// limit 1k, 10k and 100k. A log is filled by `limit` admissions spread evenly over the
// period (the state the algorithm itself builds, written with SET: filling a log of one
// entry per admission through Redis would take hours), then decisions continue the same
// trace, one per step, on the client clock: a key held at its limit rate, admitting as
// old admissions stop counting. Redis time per decision is INFO commandstats' FCALL usec;
// the memory store's and the Durable Object's cost is KeyState.check in this process
// (and the DO's JSON.stringify of the state it writes to SQLite).
import type { Redis } from "ioredis";
import type { StoredState } from "../../src/core/algorithms.js";
import { KeyState } from "../../src/core/key-state.js";
import { parsePolicy } from "../../src/core/policy.js";
import { slidingLog } from "../../src/core/sliding-log.js";
import type { Policy } from "../../src/core/types.js";
import { decodeStoredState } from "../../src/stores/redis/codec.js";
import { keyLayout } from "../../src/stores/redis/keys.js";
import { RedisStore } from "../../src/stores/redis/store.js";
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

/** The state `limit` admissions of cost 1 at startMs + i·stepMs leave, built by the algorithm itself. */
function filledState(policy: Policy, startMs: number, stepMs: number): StoredState {
  let state = slidingLog.admit(undefined, policy, startMs, startMs, 1, undefined);
  for (let i = 1; i < policy.limit; i++) {
    const atMs = startMs + i * stepMs;
    state = slidingLog.admit(state, policy, atMs, atMs, 1, undefined);
  }
  return { algorithm: "sliding-log", state };
}

/** The Redis text of a sliding-log state, as entries.lua writes it ("l:<untilMs>,<cost>,;…"). */
function encodeForRedis(stored: StoredState): string {
  if (stored.algorithm !== "sliding-log") throw new Error("a sliding-log state was expected");
  const text = `l:${stored.state.entries.map(([untilMs, cost]) => `${untilMs},${cost},`).join(";")}`;
  if (JSON.stringify(decodeStoredState(text)) !== JSON.stringify(stored)) throw new Error("the bench's encoding does not read back as the state");
  return text;
}

async function measureRedis(admin: Redis, client: Redis, options: SlidingLogOptions, policy: Policy, stored: StoredState, startMs: number, stepMs: number) {
  const prefix = `bench:${options.runId}:sliding-log:${policy.limit}:`;
  const key = "full";
  let nowMs = startMs + policy.limit * stepMs;
  // A full old-style log takes far longer than the store's default 50 ms per call.
  const store = new RedisStore({ client, keyPrefix: prefix, clock: "client", clockMs: () => nowMs, timeoutMs: 60_000, coalesceWrites: false });
  await client.set(keyLayout(prefix, key).stateKey(policy.name), encodeForRedis(stored), "PX", 10 * options.periodMs);
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
  await client.del(keyLayout(prefix, key).stateKey(policy.name));
  return { calls, admitted, usPerDecision: usec / calls };
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
      const redis = await measureRedis(admin, client, options, policy, stored, startMs, stepMs);
      const node = measureNode(options, policy, stored, startMs, stepMs, false);
      const nodeJson = measureNode(options, policy, stored, startMs, stepMs, true);
      const row: SlidingLogRow = {
        limit,
        entries,
        stateChars: encodeForRedis(stored).length,
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
  return [`Goal (issue 12): at most ${SLIDING_LOG_GOAL_US} µs of Redis time per decision at limit ${largest.limit.toLocaleString("en-US")} — this run: ${us(largest.redisUsPerDecision)} µs: **${met ? "met" : "missed"}**.`];
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
