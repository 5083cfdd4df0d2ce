import { type StoredState, capacityOf } from "../../core/algorithms.js";
import { decide, decideOne } from "../../core/decision.js";
import { markTopWarning, markWarning } from "../../core/warning.js";
import type { Entry } from "../../core/entries.js";
import type { CheckOptions, Decision, Policy, PolicyDecision } from "../../core/types.js";
import { StoreFaultError } from "../../core/limiter.js";

/**
 * What the Lua scripts answer and store, read back in TypeScript. A decision comes as one
 * string of numbers; the other scripts answer flat arrays of integers (a Lua number becomes
 * an integer reply; null is -1, booleans 0/1). Each state is stored as a compact string
 * (see src/stores/redis/lua/common.lua).
 */

/**
 * What Redis answered or holds is not what the scripts write (a corrupt value, another
 * program's keys): a store fault, answered as 503 with nothing admitted, never a decision.
 */
function unexpected(what: string, value: unknown): StoreFaultError {
  return new StoreFaultError(`unexpected ${what}: ${JSON.stringify(value)}`);
}

/** An array reply of integers, some perhaps as decimal strings. */
export type IntegerReply = readonly (number | string)[];

/** Fields before the per-policy ones, and fields per policy (src/stores/redis/lua/decide.lua). */
const DECISION_HEADER = 4;
const POLICY_FIELDS = 3;

const orNull = (value: number): number | null => (value === -1 ? null : value);

/**
 * Rebuilds a Decision from check.lua's reply: one string of whole numbers separated by
 * spaces, [retryAfterMs, waitMs, top policy index, leaseMs or -1], then per policy
 * [remaining, resetMs, retryAfterMs], then, for each policy a block holds, [index, blockedMs].
 * A retryAfterMs of 0 means allowed, -1 null; the top level repeats the top policy's limit,
 * remaining, resetMs (and blockedMs). `leaseId` is the id the store sent with the check.
 */
export function decodeDecision(reply: string, policies: readonly Policy[], leaseId: string): Decision {
  const fields = typeof reply === "string" ? reply.split(" ") : [];
  const count = policies.length;
  const fixedFields = DECISION_HEADER + POLICY_FIELDS * count;
  if (fields.length < fixedFields || (fields.length - fixedFields) % 2 !== 0) {
    throw unexpected("decision reply from Redis", reply);
  }
  const numbers: number[] = new Array(fields.length);
  for (let index = 0; index < fields.length; index++) {
    const value = Number(fields[index]);
    if (Number.isNaN(value)) throw unexpected("decision reply from Redis", reply);
    numbers[index] = value;
  }
  // A plain loop, no closures: this runs once per decision.
  const results: PolicyDecision[] = new Array(count);
  for (let index = 0; index < count; index++) {
    const policy = policies[index]!;
    const base = DECISION_HEADER + POLICY_FIELDS * index;
    const retryAfterMs = numbers[base + 2]!;
    results[index] = {
      policy: policy.name,
      allowed: retryAfterMs === 0,
      limit: capacityOf(policy),
      remaining: numbers[base]!,
      resetMs: numbers[base + 1]!,
      retryAfterMs: orNull(retryAfterMs),
    };
    markWarning(policy, results[index]!);
  }
  for (let index = fixedFields; index < numbers.length; index += 2) {
    const blocked = results[numbers[index]! - 1];
    if (!blocked) throw unexpected("decision reply from Redis", reply);
    blocked.blockedMs = numbers[index + 1]!;
  }
  const top = results[numbers[2]! - 1];
  if (!top) throw unexpected("decision reply from Redis", reply);
  const retryAfterMs = numbers[0]!;
  const decision: Decision = {
    allowed: retryAfterMs === 0,
    limit: top.limit,
    remaining: top.remaining,
    resetMs: top.resetMs,
    retryAfterMs: orNull(retryAfterMs),
    waitMs: numbers[1]!,
    policy: top.policy,
    policies: results,
  };
  if (top.blockedMs !== undefined) decision.blockedMs = top.blockedMs;
  markTopWarning(decision);
  const leaseMs = numbers[3]!;
  if (leaseMs !== -1) {
    decision.leaseId = leaseId;
    decision.leaseMs = leaseMs;
  }
  return decision;
}

/** The tag of each algorithm's stored states (src/stores/redis/lua/<algorithm>.lua). */
const STATE_TAGS: Record<Policy["algorithm"], string> = {
  gcra: "g:",
  "token-bucket": "t:",
  "fixed-window": "f:",
  "sliding-window": "s:",
  "sliding-log": "l:",
  concurrency: "c:",
  credits: "k:",
};

/**
 * The decision on one policy without leases, from single.lua's reply
 * "<1|0> [<sec> <usec>] <stored>": whether the script admitted the request, the server clock
 * (TIME; absent when `clientNowMs` is given) and the state stored before the call. The
 * decision is computed here with src/core from that same state and clock, exactly as the
 * script decided admission (the differential test holds the two to each other), and a
 * disagreement is a StoreFaultError, never an answer.
 */
export function decodeSingleDecision(reply: string, policy: Policy, options: CheckOptions, clientNowMs: number | undefined): Decision {
  if (typeof reply !== "string" || (reply[0] !== "0" && reply[0] !== "1") || reply[1] !== " ") {
    throw unexpected("decision reply from Redis", reply);
  }
  const { nowMs, restAt } = replyClock(reply, clientNowMs, "decision reply from Redis");
  const raw = reply.slice(restAt);
  // Another algorithm's state (the policy was redefined) counts as none, as in the script; so
  // does a block stored with it (the policy, redefined, has none: single.lua takes no block).
  const stateRaw = raw.startsWith("b:") ? raw.slice(raw.indexOf("|") + 1) : raw;
  const stored = stateRaw !== "" && stateRaw.startsWith(STATE_TAGS[policy.algorithm]) ? decodeStoredState(stateRaw) : undefined;
  const decision = decideOne(policy, stored, nowMs, options);
  const admitted = reply[0] === "1";
  if (admitted !== (options.cost > 0 && decision.allowed)) {
    throw new StoreFaultError(`Redis ${admitted ? "admitted" : "refused"} a request its stored state ${JSON.stringify(raw)} says to ${admitted ? "refuse" : "admit"}`);
  }
  return decision;
}

/** The clock and the rest of a single.lua or stack.lua reply, after its "<1|0> ". */
function replyClock(reply: string, clientNowMs: number | undefined, what: string): { nowMs: number; restAt: number } {
  if (clientNowMs !== undefined) return { nowMs: clientNowMs, restAt: 2 };
  const secondsEnd = reply.indexOf(" ", 2);
  const microsEnd = reply.indexOf(" ", secondsEnd + 1);
  if (secondsEnd < 0 || microsEnd < 0) throw unexpected(what, reply);
  // As the script computes it: seconds * 1000 + floor(microseconds / 1000).
  return { nowMs: Number(reply.slice(2, secondsEnd)) * 1000 + Math.floor(Number(reply.slice(secondsEnd + 1, microsEnd)) / 1000), restAt: microsEnd + 1 };
}

/**
 * The decision on a stack of several policies without leases or blocks, from stack.lua's
 * reply "<1|0> [<sec> <usec>] <stored 1>\n<stored 2>…" (each state as stored before the call,
 * "" for none; every one is its policy's algorithm's own, or the script would have answered
 * "r"). As decodeSingleDecision: the decision is src/core's on those states at that clock, and
 * a disagreement with the script's admission is a StoreFaultError.
 */
export function decodeStackDecision(reply: string, policies: readonly Policy[], options: CheckOptions, clientNowMs: number | undefined): Decision {
  if (typeof reply !== "string" || (reply[0] !== "0" && reply[0] !== "1") || reply[1] !== " ") throw unexpected("stack decision reply from Redis", reply);
  const { nowMs, restAt } = replyClock(reply, clientNowMs, "stack decision reply from Redis");
  const raws = reply.slice(restAt).split("\n");
  if (raws.length !== policies.length) throw unexpected("stack decision reply from Redis", reply);
  const stored: (StoredState | undefined)[] = new Array(policies.length);
  for (let i = 0; i < policies.length; i++) {
    const raw = raws[i]!;
    if (raw === "") continue;
    if (!raw.startsWith(STATE_TAGS[policies[i]!.algorithm])) throw unexpected("stack decision reply from Redis", reply);
    stored[i] = decodeStoredState(raw);
  }
  // By position: a stack holds a handful of policies, so a scan beats a Map per decision.
  const stateOf = (name: string) => {
    for (let i = 0; i < policies.length; i++) if (policies[i]!.name === name) return stored[i];
    return undefined;
  };
  // stack.lua recorded the admission: no state changes to build.
  const { decision } = decide(policies, stateOf, nowMs, options, false);
  const admitted = reply[0] === "1";
  if (admitted !== decision.allowed) {
    throw new StoreFaultError(`Redis ${admitted ? "admitted" : "refused"} a request its stored states ${JSON.stringify(raws)} say to ${admitted ? "refuse" : "admit"}`);
  }
  return decision;
}

/** What one `acquire.lua` attempt answered. */
export type AcquireAttempt =
  | { status: "acquired"; leaseId: string; leaseMs: number; limit: number; remaining: number }
  | { status: "denied"; retryAfterMs: number | null }
  | { status: "queued"; untilExpiryMs: number | null };

/**
 * Reads acquire.lua's array: {1, top policy index, remaining} | {0, retryAfterMs} | {2, ms
 * until the next held lease expires}. `leaseId` (the waiter id) and `leaseMs` are what the
 * store sent.
 */
export function decodeAcquireAttempt(reply: IntegerReply, policies: readonly Policy[], leaseId: string, leaseMs: number): AcquireAttempt {
  const [status, first, second] = Array.isArray(reply) ? reply.map(Number) : [];
  if (status === 1) return { status: "acquired", leaseId, leaseMs, limit: capacityOf(policies[first! - 1]!), remaining: second! };
  if (status === 0) return { status: "denied", retryAfterMs: orNull(first!) };
  if (status === 2) return { status: "queued", untilExpiryMs: orNull(first!) };
  throw unexpected("acquire reply from Redis", reply);
}

/** A number the scripts wrote with %.17g (exact), or a StoreFaultError naming the whole value. */
function numberIn(text: string | undefined, raw: string): number {
  const value = text === undefined || text === "" ? Number.NaN : Number(text);
  if (Number.isNaN(value)) throw unexpected("Redis state", raw);
  return value;
}

function decodeEntries(body: string, raw: string): Entry[] {
  if (body === "") return [];
  return body.split(";").map((item): Entry => {
    const [untilMs, cost, ...leaseId] = item.split(",");
    return [numberIn(untilMs, raw), numberIn(cost, raw), decodeURIComponent(leaseId.join(","))];
  });
}

/**
 * The core's StoredState for a value the scripts stored ("g:<tatMs>", "t:<tokens>:<anchorMs>",
 * "f:<windowStartMs>:<count>", "s:<windowStartMs>:<prev>:<curr>", "l:<entries>",
 * "c:<entries>", "k:<balance>:<windowStartMs>", entries being "<untilMs>,<cost>,<leaseId>;…"), with a block before it when one
 * was stored ("b:<blockedUntilMs>|<state>").
 *
 * @example decodeStoredState("g:1700000000250") // { algorithm: "gcra", state: { tatMs: 1700000000250 } }
 */
export function decodeStoredState(raw: string): StoredState {
  if (raw.startsWith("b:")) {
    const bar = raw.indexOf("|");
    if (bar < 0) throw unexpected("Redis state", raw);
    const stored = decodeStoredState(raw.slice(bar + 1));
    stored.blockedUntilMs = numberIn(raw.slice(2, bar), raw);
    return stored;
  }
  const tag = raw.slice(0, 2);
  const body = raw.slice(2);
  // Runs on every single-policy decision: no closure, no split for GCRA.
  if (tag === "g:") return { algorithm: "gcra", state: { tatMs: numberIn(body, raw) } };
  const fields = body.split(":");
  switch (tag) {
    case "t:":
      return { algorithm: "token-bucket", state: { tokens: numberIn(fields[0], raw), anchorMs: numberIn(fields[1], raw) } };
    case "f:":
      return { algorithm: "fixed-window", state: { windowStartMs: numberIn(fields[0], raw), count: numberIn(fields[1], raw) } };
    case "s:":
      return {
        algorithm: "sliding-window",
        state: { windowStartMs: numberIn(fields[0], raw), prevCount: numberIn(fields[1], raw), currCount: numberIn(fields[2], raw) },
      };
    case "l:":
      return { algorithm: "sliding-log", state: { entries: decodeEntries(body, raw) } };
    case "c:":
      return { algorithm: "concurrency", state: { entries: decodeEntries(body, raw) } };
    case "k:":
      return { algorithm: "credits", state: { balance: numberIn(fields[0], raw), windowStartMs: numberIn(fields[1], raw) } };
    default:
      throw unexpected("Redis state", raw);
  }
}
