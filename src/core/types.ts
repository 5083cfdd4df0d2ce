import type { CalendarSpec } from "./calendar.js";

/** The algorithms (README "Algorithms"). */
export const ALGORITHMS = ["gcra", "token-bucket", "fixed-window", "sliding-window", "sliding-log", "concurrency", "credits"] as const;
export type AlgorithmName = (typeof ALGORITHMS)[number];

/** A validated policy: durations are resolved to milliseconds and defaults filled in. */
export interface Policy {
  /** Unique within a config; state belongs to (key, name). */
  name: string;
  algorithm: AlgorithmName;
  /** Requests (cost units) per period; for `concurrency`, holders at once. */
  limit: number;
  /** Window or refill period in ms (unused by `concurrency`, kept as 1000). */
  periodMs: number;
  /** gcra / token-bucket capacity in cost units; equals `limit` elsewhere. */
  burst: number;
  /** concurrency only: a lease not released by then expires. */
  leaseMs: number;
  /** What a decision is when the store cannot be reached. */
  failMode: "open" | "closed";
  /**
   * Hot keys: a deny cache and local token batches in front of the store (README: "Hot keys").
   * `share` (0 … 0.5) is the most of the capacity one cache's outstanding batch may hold; 0 is the deny cache alone.
   */
  local?: { share: number };
  /**
   * Penalty box: a denial by this policy keeps the key refused for this long (1 s … 1 d), even
   * after the window refills. Not for concurrency.
   */
  blockMs?: number;
  /**
   * fixed-window: windows start at this calendar's boundaries instead of every periodMs (periodMs
   * then holds the unit's longest window, for what needs a number). credits: the refill's
   * boundaries (none: the balance is never refilled).
   */
  calendar?: CalendarSpec;
  /** credits with a refill: the balance is set back to this at each boundary of `calendar` (undefined: to `limit`). */
  refillTo?: number;
  /**
   * Near-limit signal (0 < warnAt < 1): a decision carries `warning: true` once the key has used
   * at least this share of `limit` (its capacity) in its window. Changes no decision.
   */
  warnAt?: number;
}

/** One policy's part of a decision. Every time is an integer number of milliseconds. */
export interface PolicyDecision {
  policy: string;
  allowed: boolean;
  limit: number;
  /** Cost-1 requests that would still be admitted now, after this decision. */
  remaining: number;
  /** Time until this policy's state for the key is back to fresh and full. */
  resetMs: number;
  /** 0 when allowed; when denied, time until the same request would be admitted; null if never. */
  retryAfterMs: number | null;
  /** Present while a block (policy `block`) refuses every request of the key: time until it ends. */
  blockedMs?: number;
  /** Present (true) when the policy has `warnAt` and the key has used at least that share of `limit`. */
  warning?: true;
}

/** The answer to a check or peek (README "HTTP API"). */
export interface Decision extends Omit<PolicyDecision, "policy"> {
  /** Reserve mode: the request was admitted for a slot this far in the future. */
  waitMs: number;
  /** The most restrictive policy, whose fields the top level repeats. */
  policy: string;
  policies: PolicyDecision[];
  /** Present when a concurrency policy admitted the request: release it with this id. */
  leaseId?: string;
  leaseMs?: number;
  /** Present (true) when the store was unreachable and a `failMode: open` policy admitted the request. */
  failedOpen?: boolean;
}

export type CheckMode = "reject" | "reserve";

/**
 * A cost per policy of a stack: a list aligned with the policies (`costs[i]` for
 * `policies[i]`), or an object by policy name that names every policy of the stack.
 */
export type PolicyCosts = readonly number[] | Readonly<Record<string, number>>;

/**
 * What a debit consumes: one cost for every policy of the stack (−1e9 … 1e9, negative: a
 * refund), or a cost per policy (PolicyCosts, each −1e9 … 1e9; 0 leaves that policy as it is).
 */
export type DebitCost = number | PolicyCosts;

/** What a caller asks of a check. */
export interface CheckOptions {
  /** Integer 0 … 1e9; 0 peeks. Every policy of the stack is charged it, unless `costs` is given. */
  cost: number;
  mode: CheckMode;
  /** Reserve mode: the latest slot the caller accepts, in ms from now. */
  maxWaitMs: number;
  /**
   * A cost per policy instead of `cost` (which is then not read): for a stack whose policies
   * count different measures of one request (an LLM route's requests, input and output
   * tokens). Each is an integer 0 … 1e9, and the check is still one atomic, all-or-nothing
   * decision: the request is admitted only when every policy admits its own cost (at one slot,
   * in reserve mode), and then each consumes its own; refused, nothing is consumed from any.
   *
   * A cost of 0 *peeks* that policy inside the check: it must admit a cost-1 request (at the
   * slot), and consumes nothing. It refuses as a check's policy does (a refusal starts its
   * `block`), and its `remaining` is a peek's. When every cost is 0 the check is a peek
   * (cost 0). Wrong length, a name not in the stack, a policy left out, a non-integer or an
   * out-of-range cost is a ValidationError naming it (`costs`, `costs.1`, `costs.itpm`).
   *
   * @example limiter.check(key, [rpm, itpm, otpm], { cost: 1, mode: "reject", maxWaitMs: 0, costs: [1, 800, 0] })
   */
  costs?: PolicyCosts;
}

export interface AcquireOptions {
  /** Wait in FIFO order for at most this long (0: answer at once). */
  maxWaitMs: number;
  /** Overrides the policy's lease length for this lease. */
  leaseMs?: number;
}

export type AcquireResult =
  | { acquired: true; leaseId: string; leaseMs: number; limit: number; remaining: number }
  | { acquired: false; retryAfterMs: number | null };

export interface ReleaseResult {
  released: boolean;
}

export interface ExtendResult {
  extended: boolean;
  leaseMs: number;
}

/** A change to a credits balance (POST /v1/credits): `add` raises it, `set` sets it. */
export type CreditsChange = { add: number } | { set: number };

/** What a credits change answers: the balance after it, as a decision reports it (never below 0). */
export interface CreditsResult {
  remaining: number;
}
