import type { Planned } from "./plan.js";
import { isQuota } from "./quota.js";
import type { RlsStatus } from "./status.js";
import { UNITS, UNIT_MS, type UnitName } from "./types.js";

/** The header names of the reference's LIMIT_RESPONSE_HEADERS_ENABLED (LIMIT_LIMIT_HEADER, …). */
export interface ReferenceHeaderNames {
  limit: string;
  remaining: string;
  reset: string;
}

/**
 * envoyproxy/ratelimit's three headers, as it picks them: the descriptor with the fewest
 * requests left, except that a plain (not quota) descriptor over its limit is the one reported
 * (the last such); `Reset` is the seconds to the end of that limit's unit, as the reference
 * computes it from the clock. None when no descriptor has a limit.
 */
export function referenceHeadersOf(names: ReferenceHeaderNames, planned: readonly Planned[], statuses: readonly RlsStatus[], globalQuota: boolean, nowMs: number): { key: string; value: string }[] | undefined {
  let chosen: RlsStatus | undefined;
  let fewest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < statuses.length; i++) {
    const status = statuses[i]!;
    if (planned[i]!.kind === "unlimited") continue;
    if (status.current_limit && status.limit_remaining < fewest) {
      chosen = status;
      fewest = status.limit_remaining;
    }
    if (status.code === "OVER_LIMIT" && !isQuota(planned[i]!, globalQuota)) {
      chosen = status;
      fewest = 0;
    }
  }
  if (!chosen?.current_limit) return undefined;
  return [
    { key: names.limit, value: String(chosen.current_limit.requests_per_unit) },
    { key: names.remaining, value: String(chosen.limit_remaining) },
    { key: names.reset, value: String(resetSeconds(chosen, nowMs)) },
  ];
}

function resetSeconds(status: RlsStatus, nowMs: number): number {
  const name = (Object.keys(UNITS) as UnitName[]).find((candidate) => UNITS[candidate] === status.current_limit!.unit);
  if (!name) return status.duration_until_reset?.seconds ?? 0;
  const unitSeconds = UNIT_MS[name] / 1000;
  return unitSeconds - (Math.floor(nowMs / 1000) % unitSeconds);
}
