// The limiters (and floors) bench:redis compares, each as a "decider": one call per request
// on one ioredis connection, resolving true when the request was admitted.
import { Command, Redis } from "ioredis";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { type AlgorithmName, type Policy, decide, parsePolicy } from "../../src/core/index.js";
import { REDIS_CLIENT_OPTIONS, RedisStore } from "../../src/redis.js";
import { NEVER_DENY_GCRA } from "./redis-policies.js";
import { upstashStyleLimiter } from "./redis-upstash.js";

export type Decide = (key: string) => Promise<boolean>;

export interface LimitSpec {
  limit: number;
  periodMs: number;
  /** Throughput runs: a limit no request reaches, on a state that lives between calls (GCRA: NEVER_DENY_GCRA). */
  neverDeny?: boolean;
}

export interface Contender {
  /** Short id (table column, key prefix). */
  id: string;
  label: string;
  /** Builds a decider on `client` for `spec`; every key it touches starts with `prefix`. */
  create(client: Redis, spec: LimitSpec, prefix: string): Promise<Decide>;
  /**
   * How many requests the limiter may admit on one fresh key within `elapsedMs` (default:
   * `limit`, for the window algorithms when no window boundary is crossed).
   */
  allowance?(spec: LimitSpec, elapsedMs: number): number;
}

/** The same client settings for everybody: Spillway's advice (no offline queue, no resend). */
export async function connect(url: string): Promise<Redis> {
  const client = new Redis(url, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true });
  client.on("error", () => {});
  await client.connect();
  return client;
}

// Spillway's per-call timeout is a feature (it stays in the measurement), but 50 ms is too
// tight for 256 callers queued on one connection of a shared 2-core machine.
const SPILLWAY_TIMEOUT_MS = 2000;
const CHECK = { cost: 1, mode: "reject", maxWaitMs: 0 } as const;

function spillway(algorithm: AlgorithmName, label: string, coalesceWrites = true): Contender {
  return {
    id: `spillway-${algorithm}${coalesceWrites ? "" : "-sent-at-once"}`,
    label,
    async create(client, spec, prefix) {
      const shape = algorithm === "gcra" && spec.neverDeny ? NEVER_DENY_GCRA : { limit: spec.limit };
      const policy = parsePolicy({ name: "bench", algorithm, ...shape, period: spec.periodMs }, "policy");
      const store = new RedisStore({ client, keyPrefix: prefix, timeoutMs: SPILLWAY_TIMEOUT_MS, coalesceWrites });
      const policies = [policy];
      return async (key) => (await store.check(key, policies, CHECK)).allowed;
    },
  };
}

/**
 * A stack of two policies (GCRA and a fixed window) on one key: the store's check.lua, which
 * decides in full in Lua, where one policy takes single.lua (README, "Redis mode").
 */
export const SPILLWAY_STACK: Contender = {
  id: "spillway-stack",
  label: "Spillway stack: GCRA + fixed-window",
  async create(client, spec, prefix) {
    const gcraShape = spec.neverDeny ? NEVER_DENY_GCRA : { limit: spec.limit };
    const policies = [
      parsePolicy({ name: "bench", algorithm: "gcra", ...gcraShape, period: spec.periodMs }, "policy"),
      parsePolicy({ name: "bench-window", algorithm: "fixed-window", limit: spec.limit, period: spec.periodMs }, "policy"),
    ];
    const store = new RedisStore({ client, keyPrefix: prefix, timeoutMs: SPILLWAY_TIMEOUT_MS });
    return async (key) => (await store.check(key, policies, CHECK)).allowed;
  },
};

export const FLOOR_EVALSHA: Contender = {
  id: "floor-evalsha",
  label: "floor: EVALSHA `return 1`",
  async create(client, _spec, prefix) {
    const sha = (await client.script("LOAD", "return 1")) as string;
    return async (key) => (await client.evalsha(sha, 1, `${prefix}${key}`)) === 1;
  },
};

/**
 * The commands of a Spillway GCRA decision and nothing else: one FCALL with Spillway's key
 * and argument that reads the server clock, GETs the state, SETs a constant one with PXAT
 * and answers a reply of the same shape. Spillway ÷ this row is the cost of its own logic
 * (Lua and Node); this row ÷ the floor is the cost of any exact limiter's clock, read and write.
 */
const COMMANDS_ONLY_LIBRARY = `#!lua name=spillway_bench_commands
redis.register_function("spillway_bench_commands", function(keys, args)
  local time = redis.call("TIME")
  local raw = redis.call("GET", keys[1])
  redis.call("SET", keys[1], "g:4102444800000", "PXAT", "4102444800000")
  return "1 " .. time[1] .. " " .. time[2] .. " " .. (raw or "")
end)
`;

export const FLOOR_COMMANDS_ONLY: Contender = {
  id: "floor-commands",
  label: "floor: FCALL of TIME + GET + SET PXAT, no logic",
  async create(client, spec, prefix) {
    // What Spillway sends for the usual request: the policy alone (single.lua).
    const policyArg = `gcra ${NEVER_DENY_GCRA.limit} ${spec.periodMs} ${NEVER_DENY_GCRA.burst} 0 bench`;
    return fcallDecider(client, COMMANDS_ONLY_LIBRARY, "spillway_bench_commands", prefix, [policyArg], (reply) => reply !== null);
  },
};

/**
 * Loads `library`, then FCALLs its `functionName` on Spillway's key of each user key (as
 * RedisStore sends it) and reads the reply with `admitted`.
 */
async function fcallDecider(client: Redis, library: string, functionName: string, prefix: string, args: string[], admitted: (reply: string | null) => boolean): Promise<Decide> {
  await client.call("FUNCTION", "LOAD", "REPLACE", library);
  return async (key) => {
    const command = new Command("fcall", [functionName, 1, [`${prefix}{${key}}:bench`], args], { replyEncoding: "utf8" });
    return admitted((await client.sendCommand(command)) as string | null);
  };
}

/**
 * The least a limiter that is exact, uses the server's clock and answers a whole decision can
 * do: a hand-written GCRA for one fixed policy (emission interval and tolerance as its two
 * arguments) that reads TIME, GETs the state, SETs the next one with PXAT at its own moment
 * and answers Spillway's reply; Node computes the decision from it with the core's decide(),
 * as Spillway's store does for one policy. No costs, modes, policy argument, client clock, key escaping or
 * deadline. Spillway ÷ this row is what its generality costs; this row ÷
 * rate-limiter-flexible is as close as such a limiter gets to a counter without a clock.
 */
const MINIMAL_GCRA_LIBRARY = `#!lua name=spillway_bench_minimal_gcra
redis.register_function("spillway_bench_minimal_gcra", function(keys, args)
  local time = redis.call("TIME")
  local now_ms = time[1] * 1000 + math.floor(time[2] / 1000)
  local tat_ms = now_ms
  local raw = redis.call("GET", keys[1])
  if raw then
    tat_ms = string.sub(raw, 3) + 0
    if tat_ms < now_ms then tat_ms = now_ms end
  end
  local admitted = "0 "
  if tat_ms - now_ms <= args[2] + 0 then
    local next_text = string.format("%d", tat_ms + args[1])
    redis.call("SET", keys[1], "g:" .. next_text, "PXAT", next_text)
    admitted = "1 "
  end
  return admitted .. time[1] .. " " .. time[2] .. " " .. (raw or "")
end)
`;

export const FLOOR_MINIMAL_GCRA: Contender = {
  id: "floor-minimal-gcra",
  label: "floor: minimal exact GCRA (hand-written FCALL, one fixed policy) + Spillway's decision in Node",
  async create(client, spec, prefix) {
    // Spillway GCRA's policy in this run; whole-ms intervals only (%d in the script).
    const shape = spec.neverDeny ? NEVER_DENY_GCRA : { limit: spec.limit, burst: 1 };
    const policy = parsePolicy({ name: "bench", algorithm: "gcra", ...shape, period: spec.periodMs }, "policy");
    const intervalMs = policy.periodMs / policy.limit;
    if (!Number.isInteger(intervalMs)) throw new Error(`the minimal GCRA takes whole-ms intervals, got ${intervalMs}`);
    const args = [String(intervalMs), String((policy.burst - 1) * intervalMs)];
    return fcallDecider(client, MINIMAL_GCRA_LIBRARY, "spillway_bench_minimal_gcra", prefix, args, (reply) => minimalGcraDecision(reply as string, policy).allowed);
  },
};

/**
 * The decision on the minimal GCRA's reply "<1|0> <sec> <usec> <stored>" (stored: "g:<tatMs>"
 * or empty), computed with the core from the state before the call and the server clock,
 * and held to what the script did, as Spillway's store does.
 */
function minimalGcraDecision(reply: string, policy: Policy) {
  const [admitted, seconds, micros, raw = ""] = reply.split(" ");
  const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const stored = raw === "" ? undefined : { algorithm: "gcra" as const, state: { tatMs: Number(raw.slice(2)) } };
  const { decision } = decide([policy], () => stored, nowMs, CHECK);
  if (decision.allowed !== (admitted === "1")) throw new Error(`the minimal GCRA ${admitted === "1" ? "admitted" : "refused"} what the core would not`);
  return decision;
}

export const FLOOR_INCR: Contender = {
  id: "floor-incr",
  label: "floor: INCR",
  async create(client, _spec, prefix) {
    return async (key) => (await client.incr(`${prefix}${key}`)) > 0;
  },
};

export const SPILLWAY_GCRA: Contender = {
  ...spillway("gcra", "Spillway GCRA"),
  // GCRA admits the burst at once, then one more every period/limit.
  allowance: (spec, elapsedMs) => spec.limit + Math.floor((elapsedMs * spec.limit) / spec.periodMs),
};
export const SPILLWAY_SLIDING_WINDOW = spillway("sliding-window", "Spillway sliding-window");
/** Spillway GCRA with `coalesceWrites: false`: every command written at once, as before write coalescing. */
export const SPILLWAY_GCRA_SENT_AT_ONCE = spillway("gcra", "Spillway GCRA, writes sent at once", false);
export const SPILLWAY_FIXED_WINDOW = spillway("fixed-window", "Spillway fixed-window");
export const SPILLWAY_SLIDING_LOG = spillway("sliding-log", "Spillway sliding-log");

export const RATE_LIMITER_FLEXIBLE: Contender = {
  id: "rlf",
  label: "rate-limiter-flexible RateLimiterRedis.consume",
  async create(client, spec, prefix) {
    const limiter = new RateLimiterRedis({ storeClient: client, points: spec.limit, duration: spec.periodMs / 1000, keyPrefix: prefix });
    return (key) =>
      limiter.consume(key, 1).then(
        () => true,
        (rejection: unknown) => {
          // consume rejects with a RateLimiterRes when the points are used up, an Error otherwise.
          if (rejection instanceof RateLimiterRes) return false;
          throw rejection;
        },
      );
  },
};

export const UPSTASH_STYLE: Contender = {
  id: "upstash-style",
  label: "upstash-style sliding window (EVALSHA)",
  create: (client, spec, prefix) => upstashStyleLimiter(client, prefix, spec.limit, spec.periodMs),
};

/** A deliberately racy limiter (GET, then INCR), so the over-admission test shows it can fail. */
export const NAIVE_GET_INCR: Contender = {
  id: "naive",
  label: "control: GET then INCR (not atomic)",
  async create(client, spec, prefix) {
    return async (key) => {
      const counterKey = `${prefix}${key}`;
      if (Number((await client.get(counterKey)) ?? 0) >= spec.limit) return false;
      if ((await client.incr(counterKey)) === 1) await client.pexpire(counterKey, spec.periodMs);
      return true;
    };
  },
};

/**
 * Diagnostic: Spillway GCRA on a client whose ACL user may not call FUNCTION or FCALL (as on
 * Redis < 7 or a managed service that forbids them), so the store falls back to EVALSHA of a
 * script holding the stack's algorithms: its Redis time per call ÷ SPILLWAY_GCRA's is what
 * the fallback pays for defining its Lua on every call. `client` must be logged in as that
 * user (see withoutFunctions in redis.ts).
 */
export const SPILLWAY_GCRA_EVALSHA: Contender = { ...spillway("gcra", "Spillway GCRA, EVALSHA fallback (no FUNCTION/FCALL allowed)"), id: "spillway-gcra-evalsha" };

/** Throughput contenders, floors first (ratios are to FLOOR_EVALSHA). */
export const THROUGHPUT_CONTENDERS = [
  FLOOR_EVALSHA,
  FLOOR_INCR,
  FLOOR_COMMANDS_ONLY,
  FLOOR_MINIMAL_GCRA,
  SPILLWAY_GCRA,
  SPILLWAY_GCRA_SENT_AT_ONCE,
  SPILLWAY_SLIDING_WINDOW,
  SPILLWAY_STACK,
  RATE_LIMITER_FLEXIBLE,
  UPSTASH_STYLE,
];

export const ADMISSION_CONTENDERS = [
  SPILLWAY_GCRA,
  SPILLWAY_SLIDING_WINDOW,
  SPILLWAY_FIXED_WINDOW,
  SPILLWAY_SLIDING_LOG,
  RATE_LIMITER_FLEXIBLE,
  UPSTASH_STYLE,
  NAIVE_GET_INCR,
];
