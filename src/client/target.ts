import { POLICY_NAME_PATTERN, parsePolicy } from "../core/policy.js";
import type { AcquireOptions, AcquireResult, AlgorithmName, CheckOptions, CreditsChange, CreditsResult, Decision, ExtendResult, Policy, ReleaseResult } from "../core/types.js";
import { ValidationError, describeValue } from "../core/validation.js";
import { type Limiter, applyFailMode } from "../core/limiter.js";
import { asLimiterError } from "./errors.js";

/** An inline policy as a config writes it (README "Algorithms"; what the HTTP API and the RPC binding accept). */
export interface PolicySpec {
  name: string;
  algorithm?: AlgorithmName;
  limit: number;
  /** `250ms`, `10s`, `1m`, … or a number of ms. */
  period?: string | number;
  burst?: number;
  lease?: string | number;
  failMode?: "open" | "closed";
  /** Penalty box: a denial keeps the key refused this long (`15m`, 1 s … 1 d; not for concurrency). */
  block?: string | number;
  /** fixed-window: windows start at each calendar boundary in `timezone` instead of every `period`. */
  calendar?: "day" | "week" | "month";
  /** IANA zone of `calendar` (default UTC). */
  timezone?: string;
  /** credits: set the balance back to `to` (default `limit`) at each calendar boundary. */
  refill?: { calendar: "day" | "week" | "month"; timezone?: string; to?: number };
}

/** One policy: a name the server's config defines, an inline policy object (README "Algorithms"), or an already validated Policy. */
export type PolicyItem = string | PolicySpec | Policy;
/** A policy or a stack of them (all-or-nothing). */
export type PolicyRef = PolicyItem | readonly PolicyItem[];

/**
 * A limiter on the far side of a wire (HTTP API, service binding). It takes policy
 * names as well as policies, because the server resolves names against its config.
 */
export interface RemoteLimiter extends Limiter {
  readonly resolvesPolicyNames: true;
  check(key: string, policy: PolicyRef, options: CheckOptions): Promise<Decision>;
  peek(key: string, policy: PolicyRef): Promise<Decision>;
  debit(key: string, policy: PolicyRef, cost: number, spentAtMs?: number): Promise<Decision>;
  reset(key: string, policy: PolicyRef): Promise<void>;
  acquire(key: string, policy: PolicyRef, options: AcquireOptions): Promise<AcquireResult>;
  release(key: string, policy: PolicyRef, leaseId: string): Promise<ReleaseResult>;
  extend(key: string, policy: PolicyRef, leaseId: string, leaseMs?: number): Promise<ExtendResult>;
  credits(key: string, policy: PolicyItem, change: CreditsChange): Promise<CreditsResult>;
}

export function isRemoteLimiter(limiter: Limiter): limiter is RemoteLimiter {
  return (limiter as Partial<RemoteLimiter>).resolvesPolicyNames === true;
}

function isValidatedPolicy(item: PolicySpec | Policy): item is Policy {
  return typeof (item as Policy).periodMs === "number" && typeof (item as Policy).leaseMs === "number";
}

/** A validated Policy back in its config form (README "Algorithms"), for the wire. */
export function policyToSpec(policy: Policy): PolicySpec {
  const spec: PolicySpec = { name: policy.name, algorithm: policy.algorithm, limit: policy.limit, failMode: policy.failMode };
  if (policy.algorithm === "concurrency") spec.lease = policy.leaseMs;
  else if (policy.algorithm === "credits") {
    if (policy.calendar) spec.refill = { calendar: policy.calendar.unit, timezone: policy.calendar.timezone, ...(policy.refillTo === undefined ? {} : { to: policy.refillTo }) };
  } else if (policy.calendar) {
    spec.calendar = policy.calendar.unit;
    spec.timezone = policy.calendar.timezone;
  } else spec.period = policy.periodMs;
  if (policy.algorithm === "gcra" || policy.algorithm === "token-bucket") spec.burst = policy.burst;
  if (policy.blockMs !== undefined) spec.block = policy.blockMs;
  return spec;
}

/** The wire form of a policy reference: names kept, Policies turned back into config policy objects (README "Algorithms"). */
export function policyToWire(policy: PolicyRef): string | PolicySpec | Array<string | PolicySpec> {
  const one = (item: PolicyItem) => (typeof item === "string" ? item : isValidatedPolicy(item) ? policyToSpec(item) : item);
  if (!Array.isArray(policy)) return one(policy as PolicyItem);
  const items = policy as readonly PolicyItem[];
  return items.length === 1 ? one(items[0]!) : items.map(one);
}

/**
 * A limiter bound to one key and one policy stack: what the throttle and the semaphore
 * talk to. It hides whether policies travel by name (remote) or as validated Policy
 * objects (in-process stores), applies `failMode` for in-process stores the way the
 * HTTP layer does for remote ones, and turns store outages into LimiterUnavailableError.
 */
export interface Target {
  readonly key: string;
  /** Validated policies when known on this side (inline or in-process); undefined for names. */
  readonly policies: readonly Policy[] | undefined;
  check(options: CheckOptions): Promise<Decision>;
  peek(): Promise<Decision>;
  /** Consumes `cost` past the limit, or refunds −cost spent at spentAtMs (Limiter.debit). */
  debit(cost: number, spentAtMs?: number): Promise<Decision>;
  acquire(options: AcquireOptions): Promise<AcquireResult>;
  release(leaseId: string): Promise<ReleaseResult>;
  extend(leaseId: string, leaseMs?: number): Promise<ExtendResult>;
}

/**
 * Validates `policy` for `limiter` and binds both to `key`. Throws TypeError naming
 * `field` for a bad policy, or for a name given to an in-process store (which has no config).
 */
export function bindTarget(limiter: Limiter, key: string, policy: PolicyRef, field: string): Target {
  if (typeof limiter !== "object" || limiter === null || typeof limiter.check !== "function") {
    throw new TypeError(`limiter: must be a Limiter (MemoryStore, RedisStore, httpLimiter(), bindingLimiter()), got ${describeValue(limiter)}`);
  }
  const remote = isRemoteLimiter(limiter);
  const items: readonly unknown[] = Array.isArray(policy) ? policy : [policy];
  if (items.length === 0 || items.length > 16) throw new TypeError(`${field}: must be a policy or a stack of 1 to 16 policies, got ${describeValue(policy)}`);
  const validated = items.map((item, index) => validateItem(item, Array.isArray(policy) ? `${field}.${index}` : field, remote));
  const policies = validated.every((item): item is Policy => typeof item !== "string") ? validated : undefined;
  const names = validated.map((item) => (typeof item === "string" ? item : item.name));
  const duplicate = names.find((name, index) => names.indexOf(name) !== index);
  if (duplicate !== undefined) throw new TypeError(`${field}: stacks "${duplicate}" twice`);

  if (remote) {
    const wire: PolicyRef = validated;
    return {
      key,
      policies,
      check: (options) => limiter.check(key, wire, options),
      peek: () => limiter.peek(key, wire),
      debit: (cost, spentAtMs) => limiter.debit(key, wire, cost, spentAtMs),
      acquire: (options) => limiter.acquire(key, wire, options),
      release: (leaseId) => limiter.release(key, wire, leaseId),
      extend: (leaseId, leaseMs) => limiter.extend(key, wire, leaseId, leaseMs),
    };
  }
  const local = policies!;
  const guard = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw asLimiterError(error);
    }
  };
  return {
    key,
    policies: local,
    check: (options) => guard(() => applyFailMode(local, () => limiter.check(key, local, options))),
    peek: () => guard(() => applyFailMode(local, () => limiter.peek(key, local))),
    debit: (cost, spentAtMs) => guard(() => applyFailMode(local, () => limiter.debit(key, local, cost, spentAtMs))),
    acquire: (options) => guard(() => limiter.acquire(key, local, options)),
    release: (leaseId) => guard(() => limiter.release(key, local, leaseId)),
    extend: (leaseId, leaseMs) => guard(() => limiter.extend(key, local, leaseId, leaseMs)),
  };
}

function validateItem(item: unknown, field: string, remote: boolean): string | Policy {
  if (typeof item === "string") {
    if (!remote) {
      throw new TypeError(`${field}: a policy name needs a limiter that knows the config (httpLimiter or bindingLimiter); give an in-process store an inline policy, got ${describeValue(item)}`);
    }
    if (!POLICY_NAME_PATTERN.test(item)) throw new TypeError(`${field}: must match [a-z0-9][a-z0-9._-]{0,63}, got ${describeValue(item)}`);
    return item;
  }
  if (typeof item !== "object" || item === null) throw new TypeError(`${field}: must be a policy name or a policy object, got ${describeValue(item)}`);
  const spec = isValidatedPolicy(item as PolicySpec | Policy) ? policyToSpec(item as Policy) : item;
  try {
    // The same validation the server runs, so a bad inline policy fails here, named.
    return parsePolicy(spec, field);
  } catch (error) {
    if (error instanceof ValidationError) throw new TypeError(error.message, { cause: error });
    throw error;
  }
}
