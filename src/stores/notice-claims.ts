import { describeValue } from "../core/validation.js";

/** Refuses a claim's arguments that no notifier sends: a store never guesses. */
export function assertClaimArgs(key: unknown, notice: unknown, ttlMs: unknown): void {
  if (typeof key !== "string" || key === "") throw new TypeError(`claimNotice: key must be a non-empty string, got ${describeValue(key)}`);
  if (typeof notice !== "string" || notice === "") throw new TypeError(`claimNotice: notice must be a non-empty string, got ${describeValue(notice)}`);
  if (typeof ttlMs !== "number" || !Number.isSafeInteger(ttlMs) || ttlMs < 0) throw new TypeError(`claimNotice: ttlMs must be an integer of 0 or more, got ${describeValue(ttlMs)}`);
}

/** One notice claimed for a key (`warning:monthly`), held until untilMs. */
export interface NoticeClaim {
  readonly notice: string;
  untilMs: number;
}

/** What holds a key's claims: the memory store's entry for the key. */
export interface ClaimHolder {
  notices: NoticeClaim[] | undefined;
}

/**
 * Claims a notice on the key's own entry (Limiter.claimNotice): the claims live and go with
 * the key's state, as they do in the key's Durable Object. So they need no bound of their own
 * and no walk over other keys' claims: a claim costs a look at this key's few (two events per
 * policy at most; `policies` is how many the key holds), whatever the number of keys. A key
 * the store evicts starts fresh, its notices with it.
 */
export function claimOn(holder: ClaimHolder, notice: string, ttlMs: number, nowMs: number, policies: number): boolean {
  const claims = holder.notices;
  const found = claims?.find((claim) => claim.notice === notice);
  if (ttlMs === 0) {
    if (found) holder.notices = claims!.length === 1 ? undefined : claims!.filter((claim) => claim !== found);
    return true;
  }
  if (found && found.untilMs > nowMs) return false;
  if (found) {
    found.untilMs = nowMs + ttlMs;
    return true;
  }
  const live = claims?.filter((claim) => claim.untilMs > nowMs) ?? [];
  // Two events per policy at most: past that, claims of policies the key no longer holds go first (the oldest).
  const room = 2 * Math.max(1, policies);
  holder.notices = [...live.slice(Math.max(0, live.length - room + 1)), { notice, untilMs: nowMs + ttlMs }];
  return true;
}
