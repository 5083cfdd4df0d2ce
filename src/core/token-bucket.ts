import { type Algorithm, floorCount } from "./algorithm.js";

/**
 * Tokens left at `anchorMs`. Refills happen on the grid anchorMs + k·period. When a
 * request is reserved for a future refill, anchorMs moves to that refill, so later
 * requests queue behind it (FIFO) instead of taking tokens promised to it.
 */
export interface TokenBucketState {
  tokens: number;
  anchorMs: number;
}

/** Refill ticks needed from the anchor before `tokens` reach `needed`. */
function ticksUntil(tokens: number, needed: number, limit: number): number {
  return Math.max(0, Math.ceil((needed - tokens) / limit));
}

/**
 * Token bucket with discrete refill (the self-limiters model): `limit` tokens are added
 * every `period`, up to `burst`. A fresh bucket is full.
 */
export const tokenBucket: Algorithm<TokenBucketState> = {
  earliestMs(state, policy, nowMs, cost) {
    if (cost > policy.burst) return null;
    if (!state) return nowMs;
    const refillAtMs = state.anchorMs + ticksUntil(state.tokens, cost, policy.limit) * policy.periodMs;
    return Math.max(nowMs, refillAtMs);
  },
  admit(state, policy, _nowMs, atMs, cost) {
    const start = state ?? { tokens: policy.burst, anchorMs: atMs };
    const ticks = Math.max(0, Math.floor((atMs - start.anchorMs) / policy.periodMs));
    const tokens = Math.min(policy.burst, start.tokens + ticks * policy.limit);
    return { tokens: tokens - cost, anchorMs: start.anchorMs + ticks * policy.periodMs };
  },
  standing(state, policy, nowMs) {
    if (!state) return { remaining: policy.burst, resetMs: 0 };
    const fullAtMs = tokenBucket.freshAtMs(state, policy);
    if (nowMs < state.anchorMs) return { remaining: 0, resetMs: fullAtMs - nowMs };
    const ticks = Math.floor((nowMs - state.anchorMs) / policy.periodMs);
    const tokens = Math.min(policy.burst, state.tokens + ticks * policy.limit);
    return { remaining: floorCount(tokens), resetMs: Math.max(0, fullAtMs - nowMs) };
  },
  freshAtMs(state, policy) {
    return state.anchorMs + ticksUntil(state.tokens, policy.burst, policy.limit) * policy.periodMs;
  },
  refund(state, policy, nowMs, amount) {
    // Refilled up to now (a reservation's anchor ahead of now stays), then amount back, up to burst.
    if (!state) return undefined;
    const ticks = Math.max(0, Math.floor((nowMs - state.anchorMs) / policy.periodMs));
    const tokens = Math.min(policy.burst, state.tokens + ticks * policy.limit);
    return { tokens: Math.min(policy.burst, tokens + amount), anchorMs: state.anchorMs + ticks * policy.periodMs };
  },
};
