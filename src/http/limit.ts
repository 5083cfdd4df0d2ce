import type { Context } from "hono";
import { type HeaderStyle, styledHeaders } from "../core/header-styles.js";
import type { ProviderHeaders } from "../core/provider-headers.js";
import { concurrencyPolicies } from "../core/concurrency.js";
import { sleep } from "../core/sleep.js";
import type { CheckOptions, Decision, Policy } from "../core/types.js";
import { DRY_RUN_HEADER, FAILED_OPEN_HEADER, QUOTA_EXCEEDED_TYPE } from "../core/wire.js";
import { costAboveCapacityDetail, problem, problemResponse } from "./problems.js";
import { type Limiter, applyFailMode } from "../core/limiter.js";
import type { Overrides } from "../overrides/overrides.js";

/** How one route (or one rateLimit() middleware) limits. */
export interface LimitPlan {
  policies: readonly Policy[];
  onLimit: "reject" | "delay";
  /** delay only: the longest a request is held for its reserved slot. */
  maxDelayMs: number;
  dryRun: boolean;
  legacyHeaders: boolean;
  /** rateLimit()'s `headers` option; absent: draft-10's fields. */
  headerStyle?: HeaderStyle;
  /** A gateway route's `providerHeaders` (core/provider-headers.ts): the provider's fields beside the IETF ones. */
  providerHeaders?: ProviderHeaders;
  /** Per-key limits (docs/overrides.md); absent when none can apply. */
  overrides?: Overrides;
}

/** A concurrency lease held for the life of an exchange. `release` is idempotent and never throws. */
export interface HeldLease {
  release(): Promise<void>;
}

export type LimitOutcome =
  | { admitted: false; response: Response }
  | {
      admitted: true;
      headers: Record<string, string>;
      lease?: HeldLease;
      /** The decision that admitted it (absent when a dry run's store failed): what rateLimit() hands the handler. */
      decision?: Decision;
    };

/** Structured log lines (dry-run denials, lease errors). Default: one JSON line on stdout. */
export type LogFn = (entry: Record<string, unknown>) => void;
export const defaultLog: LogFn = (entry) => console.log(JSON.stringify({ spillway: true, ...entry }));

export interface LimitContext {
  /** Aborted when the client goes away (a delayed request is then dropped). */
  signal?: AbortSignal;
  /** Where the request came from, for logs (`routes.0`). */
  label: string;
  log: LogFn;
  /** Keeps a background promise alive (a Worker's waitUntil); default: let it run. */
  defer?: (promise: Promise<unknown>) => void;
  /** The key as the user knows it, which overrides match (a gateway's key value); default: the store key. */
  overrideKey?: string;
  /**
   * The name of the key source that read `overrideKey` (a gateway route's key or fallback):
   * only overrides of that source apply. Undefined: the key was given (rateLimit(), /v1), and
   * only overrides without a source apply.
   */
  overrideSource?: string;
  /** What the request costs when known before it is forwarded (a route's `cost`); default 1. */
  cost?: number;
  /**
   * A cost per policy of the plan instead (CheckOptions.costs, in stack order): a route whose
   * policies count different measures (measured-limit.ts); 0 peeks that policy.
   */
  costs?: readonly number[];
}

/**
 * What a Worker's waitUntil is for: background work (a lease release) that must not be cut.
 * Looked up only when needed: on Node, Hono's executionCtx throws, and an Error per request
 * is measurable.
 */
export function deferOf(c: Context): (promise: Promise<unknown>) => void {
  let waitUntil: ((promise: Promise<unknown>) => void) | undefined;
  return (promise) => {
    const quiet = promise.catch(() => {});
    if (!waitUntil) {
      try {
        const ctx = c.executionCtx;
        waitUntil = (p) => ctx.waitUntil(p);
      } catch {
        // Node has no ExecutionContext: the process outlives the request anyway.
        waitUntil = () => {};
      }
    }
    waitUntil(quiet);
  };
}

/**
 * The 429 of docs/gateway.md: Retry-After, the RateLimit fields and a quota-exceeded problem body.
 * A request that can never pass (`retryAfterMs` null; `cost` above a capacity) has no
 * Retry-After (see rateLimitHeaders) and a detail that says so.
 */
export function quotaExceededResponse(decision: Decision, headers: Record<string, string>, cost = 1, policies: readonly Policy[] = []): Response {
  const violated = decision.policies.filter((result) => !result.allowed).map((result) => result.policy);
  const detail =
    decision.retryAfterMs === null ? costAboveCapacityDetail(decision, cost, policies) : `rate limit exceeded (${violated.join(", ")})${blockedUntil(decision)}; retry after ${headers["Retry-After"]} s`;
  const body = problem(429, detail, {
    type: QUOTA_EXCEEDED_TYPE,
    title: "Request cannot be satisfied as assigned quota has been exceeded",
    "violated-policies": violated,
  });
  return problemResponse(body, headers);
}

/** "; blocked until <ISO time>" while a block (policy `block`) refuses the key, else "". */
function blockedUntil(decision: Decision): string {
  let blockedMs: number | undefined;
  for (const result of decision.policies) if (result.blockedMs !== undefined) blockedMs = Math.max(blockedMs ?? 0, result.blockedMs);
  return blockedMs === undefined ? "" : `; blocked until ${new Date(Date.now() + blockedMs).toISOString()}`;
}

/**
 * Holds a lease: releases it once, and while the exchange lasts longer than half the lease,
 * extends it, so a long download keeps its slot instead of losing it to expiry mid-stream.
 */
function holdLease(limiter: Limiter, key: string, policies: readonly Policy[], decision: Decision, context: LimitContext): HeldLease {
  const leased = concurrencyPolicies(policies);
  const leaseId = decision.leaseId!;
  const leaseMs = decision.leaseMs ?? Math.min(...leased.map((policy) => policy.leaseMs));
  const extendTimer = setInterval(() => {
    const extending = limiter.extend(key, leased, leaseId).catch((error: unknown) => context.log({ event: "lease-extend-failed", route: context.label, error: String(error) }));
    context.defer?.(extending);
  }, Math.max(1000, leaseMs / 2));
  (extendTimer as { unref?: () => void }).unref?.();
  let released: Promise<void> | undefined;
  return {
    release() {
      if (!released) {
        clearInterval(extendTimer);
        released = limiter.release(key, leased, leaseId).then(
          () => undefined,
          (error: unknown) => context.log({ event: "lease-release-failed", route: context.label, error: String(error) }),
        );
        context.defer?.(released);
      }
      return released;
    },
  };
}

/**
 * Decides one request against a plan: the shared core of the gateway and rateLimit().
 * - reject: a denied request gets the 429; nothing is consumed.
 * - delay: the request is admitted for the earliest slot within maxDelayMs and held until then.
 * - dryRun: checked like reject (admissions count), but a denial only shows in headers and logs;
 *   a store failure is logged and the request passes.
 * A store failure otherwise propagates (failMode closed → the app answers 503).
 */
export function limitRequest(limiter: Limiter, key: string, plan: LimitPlan, context: LimitContext): Promise<LimitOutcome> {
  const { overrides } = plan;
  if (!overrides) return limitWith(limiter, key, plan, plan.policies, context);
  // Overrides resolve between the plan and the store: the algorithms see ordinary policies.
  const resolved = overrides.resolve(plan.policies, context.overrideKey ?? key, context.defer, context.overrideSource);
  if (resolved instanceof Promise) return resolved.then((policies) => limitWith(limiter, key, plan, policies, context));
  return limitWith(limiter, key, plan, resolved, context);
}

/**
 * The plan with the overrides for the request's key applied (docs/overrides.md): for engines
 * that take a plan whole (count-limit.ts's peek and debit). A promise only while a stale
 * overrides table is read.
 */
export function resolvedPlan(plan: LimitPlan, key: string, context: LimitContext): LimitPlan | Promise<LimitPlan> {
  const { overrides } = plan;
  if (!overrides) return plan;
  const resolved = overrides.resolve(plan.policies, context.overrideKey ?? key, context.defer, context.overrideSource);
  if (resolved instanceof Promise) return resolved.then((policies) => planWith(plan, policies));
  return planWith(plan, resolved);
}

/** Each plan's copy without overrides, made once: most keys have none, and this runs per request. */
const plainPlans = new WeakMap<LimitPlan, LimitPlan>();

/** The plan with `policies` instead of its own and no overrides left to apply. */
function planWith(plan: LimitPlan, policies: readonly Policy[]): LimitPlan {
  let plain = plainPlans.get(plan);
  if (!plain) {
    const { overrides: _applied, ...rest } = plan;
    plainPlans.set(plan, (plain = rest));
  }
  return policies === plan.policies ? plain : { ...plain, policies };
}

function limitWith(limiter: Limiter, key: string, plan: LimitPlan, policies: readonly Policy[], context: LimitContext): Promise<LimitOutcome> {
  const reserve = plan.onLimit === "delay" && !plan.dryRun;
  const options: CheckOptions = { cost: context.cost ?? 1, mode: reserve ? "reserve" : "reject", maxWaitMs: reserve ? plan.maxDelayMs : 0 };
  if (context.costs) options.costs = context.costs;
  // Promise reactions, not an async function's awaits: this runs for every limited request.
  return applyFailMode(policies, () => limiter.check(key, policies, options)).then(
    (decision) => outcomeOf(limiter, key, plan, policies, context, decision),
    (failure: unknown) => {
      if (!plan.dryRun) throw failure;
      context.log({ event: "dry-run-check-failed", route: context.label, error: String(failure) });
      return { admitted: true, headers: { [DRY_RUN_HEADER]: "error" } };
    },
  );
}

/** What a decision means for the request (see limitRequest); a promise only while a delayed request waits. */
function outcomeOf(limiter: Limiter, key: string, plan: LimitPlan, policies: readonly Policy[], context: LimitContext, decision: Decision): LimitOutcome | Promise<LimitOutcome> {
  const headers = styledHeaders(decision, policies, { legacy: plan.legacyHeaders, style: plan.headerStyle, provider: plan.providerHeaders });
  if (decision.failedOpen) headers[FAILED_OPEN_HEADER] = "true";
  const lease = decision.allowed && decision.leaseId ? holdLease(limiter, key, policies, decision, context) : undefined;

  if (plan.dryRun) {
    headers[DRY_RUN_HEADER] = decision.allowed ? "allowed" : "denied";
    if (!decision.allowed) {
      // A 2xx with Retry-After would tell well-behaved clients to back off for nothing.
      delete headers["Retry-After"];
      delete headers["retry-after-ms"];
      const violated = decision.policies.filter((result) => !result.allowed).map((result) => result.policy);
      context.log({ event: "dry-run-deny", route: context.label, key, policies: violated, retryAfterMs: decision.retryAfterMs });
    }
    return { admitted: true, headers, lease, decision };
  }
  if (!decision.allowed) return { admitted: false, response: quotaExceededResponse(decision, headers, deniedCost(decision, context), policies) };
  if (decision.waitMs > 0) return waitForSlot(decision, headers, lease, context.signal);
  return { admitted: true, headers, lease, decision };
}

/** The cost a 429's detail names: the request's, or (costs per policy) that of the first policy that can never admit its own. */
function deniedCost(decision: Decision, context: LimitContext): number | undefined {
  if (!context.costs) return context.cost;
  const never = decision.policies.findIndex((result) => result.retryAfterMs === null);
  return context.costs[never === -1 ? 0 : never] ?? context.cost;
}

/** Holds a delayed request until its reserved slot; a client that leaves meanwhile spends its slot but not its lease. */
async function waitForSlot(decision: Decision, headers: Record<string, string>, lease: HeldLease | undefined, signal: AbortSignal | undefined): Promise<LimitOutcome> {
  if (await sleep(decision.waitMs, signal)) return { admitted: true, headers, lease, decision };
  await lease?.release();
  return { admitted: false, response: new Response(null, { status: 499 }) };
}

/**
 * Wraps a body so `onDone` runs exactly once when it ends, errors or is cancelled (the
 * client went away), and `onChunk` sees each chunk. Chunks pass through as they come:
 * nothing is buffered.
 */
export function onBodyDone(body: ReadableStream<Uint8Array>, onDone: () => void, onChunk?: (chunk: Uint8Array) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    onDone();
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const chunk = await reader.read();
          if (chunk.done) {
            controller.close();
            finish();
          } else {
            // A tap (the usage reader) sees the chunk as it passes; it never holds it back.
            onChunk?.(chunk.value);
            controller.enqueue(chunk.value);
          }
        } catch (error) {
          controller.error(error);
          finish();
        }
      },
      async cancel(reason) {
        finish();
        await reader.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
}
