import { describeValue } from "../core/validation.js";

/** Claims held at most (a flood of keys past their warnAt must not grow memory without bound). */
const MAX_CLAIMS = 100_000;

/** Refuses a claim's arguments that no notifier sends: a store never guesses. */
export function assertClaimArgs(key: unknown, notice: unknown, ttlMs: unknown): void {
  if (typeof key !== "string" || key === "") throw new TypeError(`claimNotice: key must be a non-empty string, got ${describeValue(key)}`);
  if (typeof notice !== "string" || notice === "") throw new TypeError(`claimNotice: notice must be a non-empty string, got ${describeValue(notice)}`);
  if (typeof ttlMs !== "number" || !Number.isSafeInteger(ttlMs) || ttlMs < 0) throw new TypeError(`claimNotice: ttlMs must be an integer of 0 or more, got ${describeValue(ttlMs)}`);
}

/**
 * Notice claims in this process (Limiter.claimNotice): the memory store's, and the Durable
 * Object's in memory beside its row. Bounded: when full, expired claims go first, then the
 * oldest (a notice may then be sent again, never lost).
 */
export class NoticeClaims {
  private readonly untilMs = new Map<string, number>();
  private readonly clockMs: () => number;

  constructor(clockMs: () => number) {
    this.clockMs = clockMs;
  }

  claim(key: string, notice: string, ttlMs: number): boolean {
    const id = `${notice}\u0000${key}`;
    if (ttlMs === 0) {
      this.untilMs.delete(id);
      return true;
    }
    const nowMs = this.clockMs();
    const heldUntilMs = this.untilMs.get(id);
    if (heldUntilMs !== undefined && heldUntilMs > nowMs) return false;
    if (heldUntilMs === undefined && this.untilMs.size >= MAX_CLAIMS) this.makeRoom(nowMs);
    // Re-inserted, so the map's order stays oldest first.
    this.untilMs.delete(id);
    this.untilMs.set(id, nowMs + ttlMs);
    return true;
  }

  private makeRoom(nowMs: number): void {
    for (const [id, untilMs] of this.untilMs) if (untilMs <= nowMs) this.untilMs.delete(id);
    if (this.untilMs.size < MAX_CLAIMS) return;
    const oldest = this.untilMs.keys().next();
    if (!oldest.done) this.untilMs.delete(oldest.value);
  }
}
