// Limits bench:redis sets where no request may be denied (a small module: the bare server
// imports it and nothing else of the bench).

/**
 * A GCRA that never denies in a run and whose state lives between calls. At 1e9 per day
 * its tat would move 86 µs per call and be fresh (deleted) again within a ms; at 1000 per
 * day with a burst of 1e9 its tat stays days ahead.
 */
export const NEVER_DENY_GCRA = { limit: 1000, burst: 1_000_000_000 } as const;

/** The policy of the HTTP rows (`spillway serve`'s config and the bare app's headers). */
export const SERVER_POLICY = { name: "bench", algorithm: "gcra", ...NEVER_DENY_GCRA, period: "1d" } as const;
