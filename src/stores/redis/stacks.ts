import { calendarBoundsAround } from "../../core/calendar.js";
import type { AlgorithmName, CheckOptions, Policy } from "../../core/types.js";

/** What a stack sends on every call, encoded once per policies array (see stackOf). */
export interface Stack {
  /** The policies themselves, to tell a reused array whose contents changed. */
  members: readonly Policy[];
  names: readonly string[];
  algorithms: readonly AlgorithmName[];
  /** N, then per policy "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name or ->[ <blockMs>]" (context.lua). */
  args: readonly string[];
  concurrency: boolean;
  /** Some policy is credits: a call past its deadline must spend nothing (RedisStore's deadlines). */
  credits: boolean;
  /** One policy without leases: single.lua decides admission only (decodeSingleDecision). */
  single: boolean;
  /**
   * Several policies, none with a lease or a block, each of an algorithm with a fused step:
   * stack.lua decides a plain check (decodeStackDecision).
   */
  stepped: boolean;
  /** Some policy has a calendar: its argument carries boundaries around the clock (argsAt). */
  calendar: boolean;
  /** argsAt's last answer, and the clock readings it holds for. */
  calendarArgs?: { args: readonly string[]; validFromMs: number; validUntilMs: number };
}

/** The algorithms whose Lua has a fused `step` (see common.lua): what stack.lua can decide. */
const STEPPED: ReadonlySet<AlgorithmName> = new Set(["gcra", "fixed-window", "sliding-window", "sliding-log"]);

/**
 * Encoded stacks by policies array, and stacks of one policy by the policy itself (an API
 * request builds a new array each time): garbage-collected with what they encode.
 */
const stacks = new WeakMap<readonly Policy[] | Policy, Stack>();

/** The encoded stack of a policies array, cached by the array's identity (and its members). */
export function stackOf(policies: readonly Policy[]): Stack {
  if (policies.length === 0) throw new TypeError("policies must name at least one policy");
  if (policies.length === 1) {
    const policy = policies[0]!;
    let single = stacks.get(policy);
    if (!single) stacks.set(policy, (single = encodeStack(policies)));
    return single;
  }
  const cached = stacks.get(policies);
  if (cached && sameMembers(cached.members, policies)) return cached;
  const stack = encodeStack(policies);
  stacks.set(policies, stack);
  return stack;
}

function encodeStack(policies: readonly Policy[]): Stack {
  const args = [String(policies.length)];
  for (const policy of policies) {
    // The scripts read a name only to queue waiters for a concurrency policy. Others send "-":
    // policies that differ by name alone (an Envoy descriptor's counters, one per value) are
    // then one argument text, which the library parses once (context.lua's policy cache).
    const name = policy.algorithm === "concurrency" ? policy.name : "-";
    args.push(policySpec(policy, name, undefined));
  }
  const concurrency = policies.some((policy) => policy.algorithm === "concurrency");
  // A policy with a block writes state on a denial too, which check.lua does (single.lua only admits).
  const blocks = policies.some((policy) => policy.blockMs !== undefined);
  return {
    members: [...policies],
    names: policies.map((policy) => policy.name),
    algorithms: policies.map((policy) => policy.algorithm),
    args,
    concurrency,
    credits: policies.some((policy) => policy.algorithm === "credits"),
    single: policies.length === 1 && !concurrency && !blocks,
    // A calendar window takes the long way (its window comes from the boundaries sent).
    stepped: policies.length > 1 && !blocks && policies.every((policy) => STEPPED.has(policy.algorithm) && !policy.calendar),
    calendar: policies.some((policy) => policy.calendar !== undefined),
  };
}

/**
 * A policy's argument (context.lua): "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>",
 * then " <blockMs>" when it has a block; a policy with a calendar or a refill amount adds
 * " <blockMs or -> <boundaries or -> [<refillTo>]".
 */
function policySpec(policy: Policy, name: string, bounds: readonly number[] | undefined): string {
  const spec = `${policy.algorithm} ${policy.limit} ${policy.periodMs} ${policy.burst} ${policy.leaseMs} ${name}`;
  // A name has no spaces, so the block may follow it, only when there is one.
  if (bounds === undefined && policy.refillTo === undefined) return policy.blockMs === undefined ? spec : `${spec} ${policy.blockMs}`;
  const refill = policy.refillTo === undefined ? "" : ` ${policy.refillTo}`;
  return `${spec} ${policy.blockMs ?? "-"} ${bounds ? bounds.join(",") : "-"}${refill}`;
}

/**
 * The stack's arguments for a call made at the caller's clock reading aroundMs: a policy with
 * a calendar carries the boundaries around it (calendarBoundsAround), among which the script
 * picks by the store's own clock. The same text for as long as the boundaries are the same
 * (once or twice per window), so the script's policy cache still parses it once.
 */
export function argsAt(stack: Stack, aroundMs: number): readonly string[] {
  if (!stack.calendar) return stack.args;
  const cached = stack.calendarArgs;
  if (cached && cached.validFromMs <= aroundMs && aroundMs < cached.validUntilMs) return cached.args;
  const args = [stack.args[0]!];
  let validFromMs = Number.NEGATIVE_INFINITY;
  let validUntilMs = Number.POSITIVE_INFINITY;
  for (const policy of stack.members) {
    if (!policy.calendar) {
      args.push(policySpec(policy, policy.algorithm === "concurrency" ? policy.name : "-", undefined));
      continue;
    }
    const around = calendarBoundsAround(policy.calendar, aroundMs);
    validFromMs = Math.max(validFromMs, around.validFromMs);
    validUntilMs = Math.min(validUntilMs, around.validUntilMs);
    args.push(policySpec(policy, "-", around.bounds));
  }
  stack.calendarArgs = { args, validFromMs, validUntilMs };
  return args;
}

function sameMembers(members: readonly Policy[], policies: readonly Policy[]): boolean {
  if (members.length !== policies.length) return false;
  for (let i = 0; i < members.length; i++) if (members[i] !== policies[i]) return false;
  return true;
}

/**
 * check.lua's own arguments (after the stack's): only what the script reads, since every
 * argument costs Redis time (a plain check sends only its cost). A cost per policy
 * (CheckOptions.costs, already one per member: checkCosts) goes as one argument, the costs
 * joined by commas in stack order, where a plain check sends its one cost.
 */
export function checkArgs(options: CheckOptions, leaseId: string, peek: boolean): (string | number)[] {
  const cost = options.costs === undefined ? options.cost : (options.costs as readonly number[]).join(",");
  if (leaseId) return [cost, options.mode, options.maxWaitMs, leaseId];
  if (options.mode === "reserve") return [cost, options.mode, options.maxWaitMs];
  return peek ? [0, "peek"] : [cost];
}

/** debit.lua's cost argument: one signed cost, or one per policy joined by commas in stack order. */
export function debitCostArg(cost: number | readonly number[]): string | number {
  return typeof cost === "number" ? cost : cost.join(",");
}
