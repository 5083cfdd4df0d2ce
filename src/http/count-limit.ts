import { concurrencyPolicies } from "../core/concurrency.js";
import { styledHeaders } from "../core/header-styles.js";
import type { DebitCost, Decision, Policy } from "../core/types.js";
import { type Limiter, applyFailMode } from "../core/limiter.js";
import { DRY_RUN_HEADER, FAILED_OPEN_HEADER } from "../core/wire.js";
import { type HeldLease, type LimitContext, type LimitPlan, limitRequest, quotaExceededResponse, resolvedPlan } from "./limit.js";

/**
 * Peek now, debit on the answer: how a request is limited when what it costs depends on the
 * answer (a failed login, the tokens an LLM reports). Shared by the gateway and rateLimit()'s
 * `count`/`cost` options (docs/counting.md).
 *
 * Before: the stack's rate policies are peeked; a request is refused (429) only when not even
 * one unit would pass, and nothing is consumed. Concurrency policies take their lease as
 * always (limitRequest). After: `settle(cost)` debits the rate policies, past the limit if
 * need be. Requests in flight together all pass the peek, so a key may run up to (requests in
 * flight − 1) past its limit before their debits land; later requests wait the debt out.
 */
export type CountedOutcome =
  | { admitted: false; response: Response }
  | {
      admitted: true;
      /** The RateLimit fields before the debit (the peek's, with the lease's). */
      headers: Record<string, string>;
      lease?: HeldLease;
      settle: Settle;
      /** The peek's decision (before the debit): what rateLimit() hands the handler. */
      decision?: Decision;
    };

/**
 * Debits `cost` (0 debits nothing) and answers the RateLimit fields after it: at once where the
 * store is in this process (Limiter.debitNow), else once the store answered. `later`: nobody
 * waits on the answer (a cost in the body), so a store with debitLater may send it with the
 * key's next call (one request to the store for two). Never throws or
 * rejects: a store that fails the debit is logged, and the fields before are answered.
 * A cost per rate policy (DebitCost, in the stack's order: a route of several measures) is
 * one debit too; every cost 0 debits nothing.
 */
export type Settle = (cost: DebitCost, later?: boolean) => Fields | Promise<Fields>;
type Fields = Record<string, string>;

/**
 * The peek of limitRequest: the same plan (reject only), the same 429, the same dry run and
 * failMode. The stack's rate policies must not be empty (the config and rateLimit() refuse it).
 */
export function peekRequest(limiter: Limiter, key: string, plan: LimitPlan, context: LimitContext): Promise<CountedOutcome> {
  if (plan.overrides) {
    // Overrides first (docs/overrides.md): the peek and the debit then see ordinary policies.
    const resolved = resolvedPlan(plan, key, context);
    return resolved instanceof Promise ? resolved.then((one) => peekRequest(limiter, key, one, context)) : peekRequest(limiter, key, resolved, context);
  }
  const { rated, leased } = splitOf(plan.policies);
  const startedMs = limiter.decidedOnPeek ? performance.now() : 0;
  return applyFailMode(rated, () => limiter.peek(key, rated)).then(
    (peeked): CountedOutcome | Promise<CountedOutcome> => {
      const headers = fieldsOf(peeked, rated, plan);
      const blocking = !peeked.allowed && !plan.dryRun && rated.some((policy) => policy.blockMs !== undefined);
      // The peek decided the request, told as a check's decision is (metrics; config `notify`:
      // `exhausted`); a refusal that starts a block is told by refuseAndBlock's check instead.
      if (!blocking) limiter.decidedOnPeek?.(key, rated, peeked, performance.now() - startedMs);
      if (!peeked.allowed) {
        if (blocking) return refuseAndBlock(limiter, key, rated, plan, context).then((outcome) => withLease(outcome, limiter, key, leased, plan, context));
        if (!plan.dryRun) return { admitted: false, response: quotaExceededResponse(peeked, headers, 1, rated) };
        delete headers["Retry-After"];
        delete headers["retry-after-ms"];
        const violated = peeked.policies.filter((result) => !result.allowed).map((result) => result.policy);
        context.log({ event: "dry-run-deny", route: context.label, key, policies: violated, retryAfterMs: peeked.retryAfterMs });
      }
      return withLease({ admitted: true, headers, settle: settler(limiter, key, rated, plan, context, headers), decision: peeked }, limiter, key, leased, plan, context);
    },
    (failure: unknown) => {
      if (!plan.dryRun) throw failure;
      context.log({ event: "dry-run-check-failed", route: context.label, error: String(failure) });
      return { admitted: true, headers: { [DRY_RUN_HEADER]: "error" }, settle: () => ({ [DRY_RUN_HEADER]: "error" }) };
    },
  );
}

/** A stack's rate policies (peeked, debited) and concurrency policies (leased), split once per stack: a plan lives as long as its route. */
const splits = new WeakMap<readonly Policy[], { rated: Policy[]; leased: Policy[] }>();
export function splitOf(policies: readonly Policy[]): { rated: Policy[]; leased: Policy[] } {
  let split = splits.get(policies);
  if (!split) {
    split = { rated: policies.filter((policy) => policy.algorithm !== "concurrency"), leased: concurrencyPolicies(policies) };
    splits.set(policies, split);
  }
  return split;
}

/** Concurrency policies take their lease as always (limitRequest), once the rate policies let the request in; their fields join. */
function withLease(outcome: CountedOutcome, limiter: Limiter, key: string, leased: readonly Policy[], plan: LimitPlan, context: LimitContext): CountedOutcome | Promise<CountedOutcome> {
  if (!outcome.admitted || leased.length === 0) return outcome;
  const { headers, settle, decision } = outcome;
  return limitRequest(limiter, key, { ...plan, policies: leased }, { ...context, cost: 1 }).then((leasing): CountedOutcome => {
    if (!leasing.admitted) return leasing;
    const withLeaseFields = (after: Fields) => joinFields(after, leasing.headers);
    return { admitted: true, headers: joinFields(headers, leasing.headers), lease: leasing.lease, settle: (cost, later) => whenSettled(settle(cost, later), withLeaseFields), decision };
  });
}

/**
 * A peek never starts a `block`, but a refusal by a policy with one must: the refusal is
 * recorded as a check (cost 1), which the policy refuses too and which starts the block.
 * Should the key have refilled between the two calls, the check admits (and consumed its unit):
 * the request then goes on, counted as that one unit, and its answer debits nothing more.
 */
function refuseAndBlock(limiter: Limiter, key: string, rated: readonly Policy[], plan: LimitPlan, context: LimitContext): Promise<CountedOutcome> {
  return applyFailMode(rated, () => limiter.check(key, rated, { cost: 1, mode: "reject", maxWaitMs: 0 })).then((decision): CountedOutcome => {
    const headers = fieldsOf(decision, rated, plan);
    if (!decision.allowed) return { admitted: false, response: quotaExceededResponse(decision, headers, 1, rated) };
    context.log({ event: "count-refill-race", route: context.label, key });
    return { admitted: true, headers, settle: () => headers, decision };
  });
}

/** The RateLimit fields of a peek or a debit, marked as limitRequest marks its own. */
function fieldsOf(decision: Decision, policies: readonly Policy[], plan: LimitPlan): Record<string, string> {
  const headers = styledHeaders(decision, policies, { legacy: plan.legacyHeaders, style: plan.headerStyle, provider: plan.providerHeaders });
  if (decision.failedOpen) headers[FAILED_OPEN_HEADER] = "true";
  if (plan.dryRun) headers[DRY_RUN_HEADER] = decision.allowed ? "allowed" : "denied";
  return headers;
}

/** `settled` passed through `then`, in the same call when it is no promise. */
function whenSettled(settled: Fields | Promise<Fields>, then: (fields: Fields) => Fields): Fields | Promise<Fields> {
  return settled instanceof Promise ? settled.then(then) : then(settled);
}

/** The RateLimit fields after a debit: the answer is the origin's, not a refusal, and a dry run's verdict is the peek's. */
function fieldsAfter(debited: Decision, rated: readonly Policy[], plan: LimitPlan, before: Fields): Fields {
  const after = fieldsOf(debited, rated, plan);
  // A key in debt shows r=0 and t, never Retry-After.
  delete after["Retry-After"];
  delete after["retry-after-ms"];
  // A dry run's verdict is the peek's: the request was let through on it.
  if (before[DRY_RUN_HEADER]) after[DRY_RUN_HEADER] = before[DRY_RUN_HEADER]!;
  return after;
}

/** A debit the store failed: logged, and the fields before are answered. */
function debitFailed(key: string, cost: DebitCost, context: LimitContext, before: Fields, error: unknown): Fields {
  context.log({ event: "debit-failed", route: context.label, key, cost, error: String(error) });
  return before;
}

/**
 * One closure per request: the store's memory-speed debit (debitNow) answers in the call, as a
 * plain route's head would go out. `spentAtMs`: when a reservation was taken (reserve, then
 * settle), so a negative settle's refund goes back to the window it was spent in.
 */
export function settler(limiter: Limiter, key: string, rated: readonly Policy[], plan: LimitPlan, context: LimitContext, before: Fields, spentAtMs?: number): Settle {
  return (cost, later) => {
    if (cost === 0 || (typeof cost !== "number" && !Object.values(cost).some((one) => one !== 0))) return before;
    if (later && limiter.debitLater && !limiter.debitNow) {
      return limiter.debitLater(key, rated, cost, spentAtMs).then(
        (debited) => fieldsAfter(debited, rated, plan, before),
        (error: unknown) => debitFailed(key, cost, context, before, error),
      );
    }
    if (limiter.debitNow) {
      try {
        return fieldsAfter(limiter.debitNow(key, rated, cost, spentAtMs), rated, plan, before);
      } catch (error) {
        return debitFailed(key, cost, context, before, error);
      }
    }
    return limiter.debit(key, rated, cost, spentAtMs).then(
      (debited) => fieldsAfter(debited, rated, plan, before),
      (error: unknown) => debitFailed(key, cost, context, before, error),
    );
  };
}

/** RateLimit fields are lists: the lease's items join the rate policies'; other fields keep the first's. */
export function joinFields(first: Record<string, string>, second: Record<string, string>): Record<string, string> {
  const joined = { ...first };
  for (const name in second) {
    if (name === "RateLimit" || name === "RateLimit-Policy") joined[name] = joined[name] ? `${joined[name]}, ${second[name]}` : second[name]!;
    else if (joined[name] === undefined || (name === DRY_RUN_HEADER && second[name] === "denied")) joined[name] = second[name]!;
  }
  return joined;
}

/** `cost` less `by` for every policy (a reservation taken from each): one number, or each of a list. */
export function lessEach(cost: DebitCost, by: number): DebitCost {
  if (typeof cost === "number") return cost - by;
  if (Array.isArray(cost)) return cost.map((one: number) => one - by);
  return Object.fromEntries(Object.entries(cost).map(([name, one]) => [name, one - by]));
}
