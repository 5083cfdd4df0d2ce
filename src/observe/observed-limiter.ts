import type { AcquireOptions, AcquireResult, CheckOptions, Decision, Policy } from "../core/types.js";
import { consumes } from "../core/costs.js";
import { type Limiter, OverloadedError, StoreUnavailableError, failOpenOrRethrow } from "../core/limiter.js";
import type { DecisionOutcome, SpillwayObserver } from "./observer.js";

/** failed_open exactly when applyFailMode will admit (its rule, not a copy of it). */
function failureOutcome(policies: readonly Policy[], error: unknown): DecisionOutcome {
  try {
    failOpenOrRethrow(policies, error);
    return "failed_open";
  } catch {
    return "error";
  }
}

/** Blocks remembered (key, policy → end): bounded, cleared when full. */
const MAX_STARTED_BLOCKS = 10_000;

/**
 * The blocks an observer was told of, by when they end. A block can start again only after
 * it ended, at least a block length (1 s or more) later, so an end within half a second of
 * the remembered one is the same block.
 */
class StartedBlocks {
  private readonly endsMs = new Map<string, number>();

  isNew(key: string, policy: string, blockedMs: number): boolean {
    const id = `${policy.length}:${policy}${key}`;
    const endMs = Date.now() + blockedMs;
    const knownEndMs = this.endsMs.get(id);
    if (knownEndMs !== undefined && Math.abs(knownEndMs - endMs) < 500) return false;
    if (this.endsMs.size >= MAX_STARTED_BLOCKS) this.endsMs.clear();
    this.endsMs.set(id, endMs);
    return true;
  }
}

const startedBlocks = new WeakMap<SpillwayObserver, StartedBlocks>();

/** One per observer: the routes' and the API's observed limiters share it. */
function startedBlocksOf(observer: SpillwayObserver): StartedBlocks {
  let started = startedBlocks.get(observer);
  if (!started) startedBlocks.set(observer, (started = new StartedBlocks()));
  return started;
}

/**
 * A Limiter that tells `observer` about every check (cost above 0) and acquire: outcome per
 * policy, store round trip, and store errors. It decides nothing itself: answers and errors
 * pass through unchanged, and the caller's failMode rule still applies. `source` names the
 * caller in events (`api`, or a gateway route's index).
 *
 * @example const limiter = observeLimiter(new MemoryStore(), liveStats, "api");
 */
export function observeLimiter(limiter: Limiter, observer: SpillwayObserver, source: string): Limiter {
  const store = limiter.kind;
  const storeError = (operation: string, key: string, error: unknown) => {
    // A call shed by an overload is no store error (spillway_shed_total counts it), nor logged per request.
    if (error instanceof OverloadedError) return;
    observer.storeError?.({ store, kind: error instanceof StoreUnavailableError ? "unavailable" : "fault", operation, source, key, error });
  };
  // Errors of calls that make no decision still say how the store is doing.
  const watched = <T>(operation: string, key: string, run: Promise<T>): Promise<T> =>
    run.catch((error: unknown) => {
      storeError(operation, key, error);
      throw error;
    });
  const failed = (operation: string, key: string, policies: readonly Policy[], startedMs: number, error: unknown): never => {
    const durationMs = performance.now() - startedMs;
    storeError(operation, key, error);
    observer.decision?.({ source, store, key, policies, outcome: failureOutcome(policies, error), policy: policies[0]!.name, durationMs });
    throw error;
  };

  // A block just started shows its whole length; so does every denial under it in the same
  // millisecond (a burst), which the observer's started blocks tell apart from a new block.
  const started = startedBlocksOf(observer);
  const blocksStarted = (key: string, policies: readonly Policy[], decision: Decision) => {
    if (decision.allowed || !observer.block) return;
    for (const part of decision.policies) {
      if (part.blockedMs === undefined) continue;
      const policy = policies.find((one) => one.name === part.policy);
      if (policy?.blockMs !== part.blockedMs || !started.isNew(key, part.policy, part.blockedMs)) continue;
      observer.block({ source, store, key, policy: part.policy, blockedMs: part.blockedMs });
    }
  };

  const observed: Limiter = {
    kind: limiter.kind,
    check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> {
      // A cost-0 check is a peek: it decides nothing.
      if (!consumes(options)) return watched("peek", key, limiter.check(key, policies, options));
      const startedMs = performance.now();
      return limiter.check(key, policies, options).then((decision) => {
        const durationMs = performance.now() - startedMs;
        observer.decision?.({
          source,
          store,
          key,
          policies,
          outcome: decision.allowed ? "allowed" : "denied",
          results: decision.policies,
          policy: decision.policy,
          durationMs,
        });
        blocksStarted(key, policies, decision);
        return decision;
      }, (error: unknown) => failed("check", key, policies, startedMs, error));
    },
    acquire(key: string, policies: readonly Policy[], options: AcquireOptions): Promise<AcquireResult> {
      const startedMs = performance.now();
      return limiter.acquire(key, policies, options).then((result) => {
        const durationMs = performance.now() - startedMs;
        const outcome = result.acquired ? "allowed" : "denied";
        observer.decision?.({ source, store, key, policies, outcome, policy: policies[0]!.name, durationMs });
        return result;
      }, (error: unknown) => failed("acquire", key, policies, startedMs, error));
    },
    peek: (key, policies) => watched("peek", key, limiter.peek(key, policies)),
    debit: (key, policies, cost, spentAtMs) =>
      watched("debit", key, limiter.debit(key, policies, cost, spentAtMs)).then((decision) => {
        blocksStarted(key, policies, decision);
        return decision;
      }),
    reset: (key, policies) => watched("reset", key, limiter.reset(key, policies)),
    credits: (key, policy, change) => watched("credits", key, limiter.credits(key, policy, change)),
    release: (key, policies, leaseId) => watched("release", key, limiter.release(key, policies, leaseId)),
    extend: (key, policies, leaseId, leaseMs) => watched("extend", key, limiter.extend(key, policies, leaseId, leaseMs)),
    health: () => limiter.health(),
  };
  if (limiter.debitNow) {
    const debitNow = limiter.debitNow.bind(limiter);
    observed.debitNow = (key, policies, cost, spentAtMs) => {
      try {
        const decision = debitNow(key, policies, cost, spentAtMs);
        blocksStarted(key, policies, decision);
        return decision;
      } catch (error) {
        storeError("debit", key, error);
        throw error;
      }
    };
  }
  if (limiter.debitLater) {
    const debitLater = limiter.debitLater.bind(limiter);
    observed.debitLater = (key, policies, cost, spentAtMs) =>
      watched("debit", key, debitLater(key, policies, cost, spentAtMs)).then((decision) => {
        blocksStarted(key, policies, decision);
        return decision;
      });
  }
  // A counted route's peek decides its request (count-limit.ts): counted as a check's decision is.
  const decidedOnPeek = limiter.decidedOnPeek?.bind(limiter);
  observed.decidedOnPeek = (key, policies, decision, durationMs) => {
    const outcome = decision.failedOpen ? "failed_open" : decision.allowed ? "allowed" : "denied";
    observer.decision?.({ source, store, key, policies, outcome, results: decision.policies, policy: decision.policy, durationMs });
    blocksStarted(key, policies, decision);
    decidedOnPeek?.(key, policies, decision, durationMs);
  };
  if (limiter.close) observed.close = () => limiter.close!();
  return observed;
}
