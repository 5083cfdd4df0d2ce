// An upstash-style sliding window, for comparison only: the well-known two-window weighted
// counter (as in @upstash/ratelimit's single-region slidingWindow), written here from its
// description. Each window is its own INCR counter; the previous window counts with the
// weight of the part of it still inside the sliding period. Keys and `now` come from the
// client, as upstash does.
import type { Redis } from "ioredis";

/**
 * KEYS[1] counter of the current window, KEYS[2] counter of the previous window.
 * ARGV[1] limit, ARGV[2] nowMs, ARGV[3] windowMs, ARGV[4] cost.
 * Returns the remaining count after admitting, or -1 when denied.
 */
export const UPSTASH_STYLE_LUA = `
local limit = tonumber(ARGV[1])
local now_ms = tonumber(ARGV[2])
local window_ms = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local current = tonumber(redis.call("GET", KEYS[1]) or "0")
local previous = tonumber(redis.call("GET", KEYS[2]) or "0")
local weighted_previous = math.floor((1 - (now_ms % window_ms) / window_ms) * previous)
if weighted_previous + current + cost > limit then return -1 end
local count = redis.call("INCRBY", KEYS[1], cost)
if count == cost then
  -- First hit of this window: keep it long enough to serve as the next one's previous.
  redis.call("PEXPIRE", KEYS[1], window_ms * 2 + 1000)
end
return limit - (count + weighted_previous)
`;

/** Loads the script once and answers a decider: true when admitted. */
export async function upstashStyleLimiter(client: Redis, prefix: string, limit: number, windowMs: number): Promise<(key: string) => Promise<boolean>> {
  const sha = (await client.script("LOAD", UPSTASH_STYLE_LUA)) as string;
  return async (key) => {
    const nowMs = Date.now();
    const window = Math.floor(nowMs / windowMs);
    const reply = await client.evalsha(sha, 2, `${prefix}${key}:${window}`, `${prefix}${key}:${window - 1}`, limit, nowMs, windowMs, 1);
    return (reply as number) >= 0;
  };
}
