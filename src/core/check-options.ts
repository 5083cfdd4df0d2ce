import type { CheckOptions } from "./types.js";
import { describeValue } from "./validation.js";

/** What a check means when its caller gives no options: one request, refused when over. */
export const DEFAULT_CHECK_OPTIONS: Readonly<CheckOptions> = Object.freeze({ cost: 1, mode: "reject", maxWaitMs: 0 });

/**
 * The options a store's check was handed, with the defaults filled in: a library caller may
 * write `store.check(key, policies)` or give only `{ cost }`. A cost or wait that is not a
 * number is a TypeError naming it (arithmetic on it would admit or deny at random).
 *
 * @example storeCheckOptions(undefined) // { cost: 1, mode: "reject", maxWaitMs: 0 }
 */
export function storeCheckOptions(options: Partial<CheckOptions> | undefined): CheckOptions {
  if (options === undefined) return DEFAULT_CHECK_OPTIONS as CheckOptions;
  if (options.cost !== undefined && options.mode !== undefined && options.maxWaitMs !== undefined) return options as CheckOptions;
  if (typeof options !== "object" || options === null) throw new TypeError(`options: must be an object ({ cost, mode, maxWaitMs }), got ${describeValue(options)}`);
  const filled = { ...DEFAULT_CHECK_OPTIONS, ...options } as CheckOptions;
  for (const field of ["cost", "maxWaitMs"] as const) {
    if (typeof filled[field] !== "number" || !Number.isFinite(filled[field])) throw new TypeError(`options.${field}: must be a number, got ${describeValue(filled[field])}`);
  }
  return filled;
}
