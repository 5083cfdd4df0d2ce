import type { Decision, PolicyDecision } from "../core/types.js";
import type { NoticeEvent, NotifyConfig } from "./config.js";

/** The JSON a webhook receives (SPEC §2 "Notify"). Times are integer ms; `at` is epoch ms. */
export interface Notice {
  event: NoticeEvent;
  /** The key as the store counts it: the `key` given to /v1/check, or a gateway route's `source:value`. */
  key: string;
  policy: string;
  limit: number;
  remaining: number;
  resetMs: number;
  at: number;
}

/**
 * Claims a notice for `ttlMs` (true for the one caller that gets it, false while it is held),
 * or, with ttlMs 0, lets it go. The store answers it, so processes and isolates sharing the
 * store send a notice once between them (Limiter.claimNotice).
 */
export type ClaimNotice = (key: string, notice: string, ttlMs: number) => Promise<boolean>;

/** A claim holds at least this long (a window that ends within a second is still one window). */
const MIN_CLAIM_MS = 1000;
/** A claim holds at most this long: a balance without a refill (resetMs 0) is told again after it. */
export const MAX_CLAIM_MS = 30 * 24 * 3_600_000;
/** Claims this process remembers so it asks the store once per window, not per decision. */
const MAX_REMEMBERED = 10_000;

export interface NotifierOptions {
  /** The config's notify (a getter: a reload may change it; undefined turns notices off). */
  config: () => NotifyConfig | undefined;
  claim: ClaimNotice;
  /** Hands a claimed notice to the edge's sender (Node: a bounded queue; Worker: waitUntil). Never throws. */
  send: (notice: Notice, config: NotifyConfig) => void;
  /** Where a claim that failed is said (default: nothing; the store's errors are logged where they happen). */
  log?: (line: string) => void;
  clockMs?: () => number;
}

/**
 * Turns decisions into notices, once per (key, policy, window, event): `warning` when a key is
 * first at or past a policy's warnAt, `exhausted` at a policy's first denial. A window is what
 * the decision's resetMs says: the claim is held until the policy's state for the key is fresh
 * again (a fixed or calendar window's end), so a key is told once per window. Off the request
 * path: nothing here is awaited by a decision, and a failure only loses a notice.
 */
export class Notifier {
  private readonly options: NotifierOptions;
  private readonly clockMs: () => number;
  /** Claims this process holds or asked for: notice id → until when (ms). */
  private readonly held = new HeldClaims();

  constructor(options: NotifierOptions) {
    this.options = options;
    this.clockMs = options.clockMs ?? Date.now;
  }

  /** Whether notices are on (a config with `notify`): off, a decision need not be shown at all. */
  enabled(): boolean {
    return this.options.config() !== undefined;
  }

  /** A decision a check or debit answered (never a peek, never a failed-open one). */
  decided(key: string, decision: Decision, checked: boolean): void {
    const config = this.options.config();
    if (!config || decision.failedOpen) return;
    for (const part of decision.policies) {
      if (part.warning && config.events.includes("warning")) this.notice("warning", key, part, config);
      // A denial only from a check: a debit's `allowed` says what a next request would get.
      if (checked && !decision.allowed && !part.allowed && part.retryAfterMs !== null && config.events.includes("exhausted")) {
        this.notice("exhausted", key, part, config);
      }
    }
  }

  /** A credits balance changed (POST /v1/credits): its notices may be sent again when it runs low. */
  creditsChanged(key: string, policy: string): void {
    if (!this.options.config()) return;
    for (const event of ["warning", "exhausted"] as const) {
      const notice = `${event}:${policy}`;
      this.held.delete(idOf(key, notice));
      this.options.claim(key, notice, 0).catch(() => {});
    }
  }

  /**
   * A claimed notice the sender dropped before it reached the webhook (its queue was full):
   * the claim is let go, so the key's next decision in the window claims and sends it again.
   */
  giveBack(notice: Notice): void {
    const name = `${notice.event}:${notice.policy}`;
    this.held.delete(idOf(notice.key, name));
    this.options.claim(notice.key, name, 0).catch(() => {});
  }

  private notice(event: NoticeEvent, key: string, part: PolicyDecision, config: NotifyConfig): void {
    const notice = `${event}:${part.policy}`;
    const id = idOf(key, notice);
    const nowMs = this.clockMs();
    const heldUntilMs = this.held.get(id);
    if (heldUntilMs !== undefined && heldUntilMs > nowMs) return;
    const ttlMs = Math.min(MAX_CLAIM_MS, Math.max(MIN_CLAIM_MS, part.resetMs === 0 ? MAX_CLAIM_MS : part.resetMs));
    this.held.set(id, nowMs + ttlMs);
    const body: Notice = { event, key, policy: part.policy, limit: part.limit, remaining: part.remaining, resetMs: part.resetMs, at: nowMs };
    this.options.claim(key, notice, ttlMs).then(
      (claimed) => {
        if (claimed) this.options.send(body, config);
      },
      (error: unknown) => {
        // Not claimed, so not sent: the next decision of the window may try again.
        this.held.delete(id);
        this.options.log?.(JSON.stringify({ level: "warn", event: "notify-claim-failed", notice: event, policy: part.policy, error: (error as Error).message }));
      },
    );
  }
}

function idOf(key: string, notice: string): string {
  return `${notice}\u0000${key}`;
}

/**
 * The notifier's memory of claims, in two generations of at most MAX_REMEMBERED / 2 each:
 * when the newer fills, the older is forgotten whole. Every step is O(1), with no walk over
 * expired entries. Forgetting costs only a question to the store, which still answers every claim.
 */
class HeldClaims {
  private newer = new Map<string, number>();
  private older = new Map<string, number>();

  get(id: string): number | undefined {
    return this.newer.get(id) ?? this.older.get(id);
  }

  set(id: string, untilMs: number): void {
    this.older.delete(id);
    if (!this.newer.has(id) && this.newer.size >= MAX_REMEMBERED / 2) {
      this.older = this.newer;
      this.newer = new Map();
    }
    this.newer.set(id, untilMs);
  }

  delete(id: string): void {
    this.newer.delete(id);
    this.older.delete(id);
  }
}
