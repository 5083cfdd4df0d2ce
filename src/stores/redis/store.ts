// The Redis store: the Limiter's methods on Redis (the call path is calls.ts, the connection connection.ts, the answers' codec codec.ts).
import { concurrencyPolicies, stackLeaseMs } from "../../core/concurrency.js";
import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, CreditsResult, DebitCost, Decision, ExtendResult, Policy, ReleaseResult } from "../../core/types.js";
import { checkCosts, consumes } from "../../core/costs.js";
import { assertCreditsChange, creditsAnswer, pastBalanceCap } from "../../core/credits.js";
import { storeCheckOptions } from "../../core/check-options.js";
import { storePolicies } from "../../core/store-policies.js";
import { assertDebitCost, assertDebitable, assertSpentAtMs } from "../../core/debit.js";
import { type CallCounts, type Limiter, OverloadedError, type StoreHealth, newLeaseId } from "../../core/limiter.js";
import { type IntegerReply, decodeAcquireAttempt, decodeDecision, decodeSingleDecision, decodeStackDecision } from "./codec.js";
import { withTimeout } from "./errors.js";
import { DEFAULT_KEY_PREFIX, escapeUserKey, validateKeyPrefix } from "./keys.js";
import type { RedisClient, ScriptName } from "./scripts.js";
import { Subscriptions } from "./client-events.js";
import { type Stack, checkArgs, debitCostArg, stackOf } from "./stacks.js";
import { LeaseUndo, unanswered } from "./undo.js";
import { LeaseWaiters } from "./waiters.js";
import { RedisOverrideTable } from "./overrides.js";
import { DEFAULT_POLL_INTERVAL_MS, type RedisStoreOptions, checkConnectionShape, createClient, positiveNumber } from "./options.js";
import { type DataLossGuard, dataLossGuardFor, fencedDecision } from "./data-loss.js";
import { probeWrites } from "./nodes.js";
import { assertClaimArgs } from "../notice-claims.js";
import { RedisCalls } from "./calls.js";

export { DEFAULT_POLL_INTERVAL_MS, DEFAULT_TIMEOUT_MS, REDIS_CLIENT_OPTIONS, type RedisStoreOptions } from "./options.js";

/*
 * Three reply protocols for a check, chosen in RedisStore.decide:
 *
 * - One policy without leases (the usual request): single.lua admits and writes, and answers
 *   whether it admitted, the clock and the state it read; Node computes the decision from
 *   those with src/core (decodeSingleDecision) and holds it to Lua's admission.
 * - Several plain policies in a reject check (an Envoy request's descriptors, a route's two
 *   limits): stack.lua does the same for each, all or nothing (decodeStackDecision).
 * - The rest (reserve, peeks, leases and their waiter queue, a stack with blocks or calendars): check.lua
 *   decides in full with decide.lua, and Node rebuilds the decision from its numbers
 *   (decodeDecision); a lease is decided where the state and the waiter queue are.
 *
 * Redis's time is the ceiling of a whole deployment (docs/redis.md), so the protocol
 * is chosen by it.
 */

const PEEK = { cost: 0, mode: "reject", maxWaitMs: 0 } as const;

/**
 * The Redis store: every decision is one FCALL (Redis 7+; EVALSHA before) of Lua that
 * mirrors `src/core`, on a standalone Redis or a Redis Cluster (all keys of a user key
 * share one hash tag). Needs Redis 6.2 or later (SET … PXAT).
 *
 * @example
 * const limiter = new RedisStore({ url: "redis://127.0.0.1:6379" });
 * await limiter.ready();
 * const decision = await limiter.check("user:1", [perMinute], { cost: 1, mode: "reject", maxWaitMs: 0 });
 */
export class RedisStore implements Limiter {
  /** "redis" (standalone), "redis-cluster", or "redis-sentinel" (a master found through its sentinels). */
  readonly kind: "redis" | "redis-cluster" | "redis-sentinel";
  readonly client: RedisClient;
  private readonly ownsClient: boolean;
  private readonly keyPrefix: string;
  private readonly timeoutMs: number;
  private readonly waiterTtlMs: number;
  private readonly waiters: LeaseWaiters;
  private readonly log: (line: string) => void;
  /** Every call to Redis: the call queue, timeouts and deadlines, the connection's state (calls.ts). */
  private readonly calls: RedisCalls;
  /** Frees in the background the leases no caller holds (an unanswered release or acquire). */
  private readonly undo: LeaseUndo;
  #overrides: RedisOverrideTable | undefined;
  /** Notices a Redis that lost its data, and fences concurrency grants after it (data-loss.ts). */
  private readonly dataLoss: DataLossGuard;
  /** This store's listeners on its client, shared with other stores on it (client-events.ts). */
  private readonly subscriptions = new Subscriptions();

  constructor(options: RedisStoreOptions) {
    checkConnectionShape(options);
    // Checked before a client exists: a refused option must leave no connection behind (whose
    // errors would then have no listener).
    this.keyPrefix = validateKeyPrefix(options.keyPrefix ?? DEFAULT_KEY_PREFIX);
    this.ownsClient = !options.client;
    this.client = options.client ?? createClient(options);
    try {
      this.log = options.log ?? ((line) => console.warn(line));
      this.calls = new RedisCalls({ client: this.client, ownsClient: this.ownsClient, keyPrefix: this.keyPrefix, subscriptions: this.subscriptions, log: this.log }, options);
      this.kind = this.calls.kind;
      this.timeoutMs = this.calls.timeoutMs;
      const pollIntervalMs = positiveNumber("pollIntervalMs", options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS, 1);
      // A waiter that stopped polling (its process died) is dropped after a few missed polls.
      this.waiterTtlMs = Math.max(1000, 4 * pollIntervalMs);
      this.waiters = new LeaseWaiters({ client: this.client, channel: `${this.keyPrefix}wake`, pollIntervalMs });
      this.undo = new LeaseUndo({ log: this.log });
      const dataCheckIntervalMs = positiveNumber("dataCheckIntervalMs", options.dataCheckIntervalMs ?? 1000, 10);
      this.dataLoss = dataLossGuardFor({ client: this.client, keyPrefix: this.keyPrefix, store: this.kind, waitMs: Math.max(4 * this.timeoutMs, 250), checkIntervalMs: dataCheckIntervalMs, log: this.log });
    } catch (error) {
      // A refused option leaves no connection behind: its errors would have no listener.
      if (this.ownsClient) {
        this.client.on("error", () => {});
        this.client.disconnect();
      }
      throw error;
    }
  }

  /** Runtime overrides (PUT /v1/overrides) live in the store: a hash per policy (overrides.ts beside this file). */
  get overrides(): RedisOverrideTable {
    return (this.#overrides ??= new RedisOverrideTable(this.client, this.keyPrefix));
  }

  /**
   * Why the last connection attempt failed (the URL without its password, the system's error
   * and a hint), or undefined while connected or before any attempt failed.
   */
  get connectionError(): string | undefined {
    return this.calls.connectionError;
  }

  /**
   * The option the last connection error blames when no retry can fix it: `"name"` when
   * every sentinel that answered knows no master of that name. Undefined otherwise.
   */
  get connectionErrorField(): "name" | "sentinels" | undefined {
    return this.calls.connectionErrorField;
  }

  /**
   * Resolves true once connected (at most `timeoutMs` of waiting), false if not yet: then
   * `connectionError` says why, and the store's log has said it once.
   */
  ready(timeoutMs = 2000): Promise<boolean> {
    return this.calls.ready(timeoutMs);
  }

  check(key: string, policies: readonly Policy[], options?: CheckOptions): Promise<Decision> {
    return this.decide(key, policies, storeCheckOptions(options), false);
  }

  /** A check, or a peek (`peek`: reports, starts no block: check.lua's mode "peek"). */
  private async decide(key: string, policies: readonly Policy[], options: CheckOptions, peek: boolean): Promise<Decision> {
    // A policy as written in a config is parsed, garbage refused (Lua would answer an error).
    policies = storePolicies(policies);
    // Costs per policy: one per member (a stack of one takes its cost as `cost`: single.lua).
    options = checkCosts(options, policies);
    const stack = stackOf(policies);
    // The client clock's reading, when the store uses it: the script and the decoding share it.
    const clientNowMs = this.calls.clientNowMs();
    if (stack.single) {
      // One policy without leases: single.lua decides admission, the core computes the rest.
      const reply = (await this.calls.runSingle(key, stack, options, clientNowMs)) as string;
      // A credits answer's TIME tells Redis's clock, which its deadlines need (server-clock.ts).
      if (stack.credits && clientNowMs === undefined) this.calls.observeClock(reply);
      return decodeSingleDecision(reply, policies[0]!, options, clientNowMs);
    }
    if (stack.stepped && !peek && options.mode === "reject" && options.cost > 0 && options.costs === undefined) {
      // Several plain limits (an Envoy request's descriptors, a route's two limits): stack.lua.
      const reply = (await this.calls.run("stack", key, stack, options.cost === 1 ? [] : [options.cost], clientNowMs)) as string;
      // "r": a stored state of another algorithm (a redefined policy): check.lua sorts it out.
      if (reply !== "r") return decodeStackDecision(reply, policies, options, clientNowMs);
    }
    const leaseId = consumes(options) && stack.concurrency ? newLeaseId() : "";
    if (leaseId) {
      const fencedMs = await this.leaseFenceMs(policies);
      if (fencedMs > 0) return fencedDecision(await this.peek(key, policies), policies, fencedMs);
    }
    const args = checkArgs(options, leaseId, peek);
    let reply: string;
    try {
      reply = (await this.calls.run("check", key, stack, args)) as string;
    } catch (error) {
      // Its caller gets an error, but the script may have run and granted the lease: free it.
      if (leaseId) this.undoLease(key, stack, leaseId, stackLeaseMs(policies), error, false);
      throw error;
    }
    return decodeDecision(reply, policies, leaseId);
  }

  peek(key: string, policies: readonly Policy[]): Promise<Decision> {
    return this.decide(key, policies, PEEK, true);
  }

  async debit(key: string, policies: readonly Policy[], debited: DebitCost, spentAtMs?: number): Promise<Decision> {
    policies = storePolicies(policies);
    assertDebitable(policies);
    const cost = assertDebitCost(debited, policies);
    assertSpentAtMs(spentAtMs);
    const refunds = typeof cost === "number" ? cost < 0 : cost.some((one) => one < 0);
    const args = refunds && spentAtMs !== undefined ? [debitCostArg(cost), this.spentArg(spentAtMs)] : [debitCostArg(cost)];
    return decodeDecision((await this.calls.run("debit", key, stackOf(policies), args)) as string, policies, "");
  }

  /**
   * A refund's spend time as debit.lua reads it: as given on the client clock (the script's
   * clock is the same one); on Redis's clock, "~<ms ago>" from this process's Date.now(), which
   * the script subtracts from its TIME, so the hosts' clocks need not agree.
   */
  private spentArg(spentAtMs: number): string | number {
    const clientNowMs = this.calls.clientNowMs();
    return clientNowMs === undefined ? `~${Date.now() - spentAtMs}` : spentAtMs;
  }

  async reset(key: string, policies: readonly Policy[]): Promise<void> {
    policies = storePolicies(policies);
    await this.calls.run("reset", key, stackOf(policies), []);
  }

  async acquire(key: string, policies: readonly Policy[], options: AcquireOptions): Promise<AcquireResult> {
    policies = storePolicies(policies);
    // What the lease is granted for: the override, else the shortest lease of the stack.
    const grantedMs = options.leaseMs ?? (concurrencyPolicies(policies).length > 0 ? stackLeaseMs(policies) : 0);
    const leaseArg = options.leaseMs ?? "";
    const stack = stackOf(policies);
    return this.waiters.acquire(
      {
        attempt: async (waiterId, mayWait) => {
          const fencedMs = await this.leaseFenceMs(policies);
          if (fencedMs > 0) return mayWait ? { status: "queued", untilExpiryMs: fencedMs } : { status: "denied", retryAfterMs: fencedMs };
          return decodeAcquireAttempt((await this.calls.run("acquire", key, stack, [waiterId, leaseArg, mayWait ? "1" : "0", this.waiterTtlMs])) as IntegerReply, policies, waiterId, grantedMs);
        },
        leave: async (waiterId) => (await this.calls.run("leave", key, stack, [waiterId])) as number,
        abandon: (waiterId, error) => this.undoLease(key, stack, waiterId, grantedMs, error, true),
      },
      options.maxWaitMs,
    );
  }

  async release(key: string, policies: readonly Policy[], leaseId: string): Promise<ReleaseResult> {
    policies = storePolicies(policies);
    const stack = stackOf(policies);
    try {
      return { released: (await this.calls.run("release", key, stack, [leaseId])) === 1 };
    } catch (error) {
      // The caller is told, and the lease is still freed as soon as Redis answers.
      if (unanswered(error)) this.undo.add(`release of lease ${leaseId}`, () => this.calls.run("release", key, stack, [leaseId]), stackLeaseMs(policies));
      throw error;
    }
  }

  async extend(key: string, policies: readonly Policy[], leaseId: string, leaseMs?: number): Promise<ExtendResult> {
    policies = storePolicies(policies);
    const lengthMs = leaseMs ?? stackLeaseMs(policies);
    return { extended: (await this.calls.run("extend", key, stackOf(policies), [leaseId, lengthMs])) === 1, leaseMs: lengthMs };
  }

  async credits(key: string, policy: Policy, change: CreditsChange): Promise<CreditsResult> {
    const [checked] = storePolicies([policy]);
    assertCreditsChange(checked!, change);
    const [op, amount] = "add" in change ? ["add", change.add] : ["set", change.set];
    const reply = (await this.calls.run("balance", key, stackOf([checked!]), [op, amount])) as number | string;
    // "cap <balance>": the change would take the balance past MAX_BALANCE, and nothing changed.
    if (typeof reply === "string" && reply.startsWith("cap ")) return creditsAnswer({ remaining: Number(reply.slice(4)), refused: pastBalanceCap(Number(reply.slice(4)), { balance: Number(reply.slice(4)) + amount, windowStartMs: 0 }) });
    return { remaining: Number(reply) };
  }

  /**
   * A notice (config `notify`) claimed in Redis with SET NX PX beside the key's state (same hash
   * tag, `~` so no policy name collides): every process sharing this Redis sends it once. Off
   * the request path, so it takes no call slot; it still gives up after the store's timeout
   * (at least a second), and the notifier then tries again on a later decision.
   */
  async claimNotice(key: string, notice: string, ttlMs: number): Promise<boolean> {
    assertClaimArgs(key, notice, ttlMs);
    const redisKey = `${this.keyPrefix}{${escapeUserKey(key)}}:~notice:${notice}`;
    const waitMs = Math.max(this.timeoutMs, 1000);
    if (ttlMs === 0) {
      await withTimeout(this.client.del(redisKey), waitMs, "notice release");
      return true;
    }
    return (await withTimeout(this.client.set(redisKey, "1", "PX", ttlMs, "NX"), waitMs, "notice claim")) === "OK";
  }

  /** Data losses detected since the store started (spillway_store_resets_total). */
  storeResets(): number {
    return this.dataLoss.resets;
  }

  /** A write to every server: a Redis that answers PING but refuses writes (OOM, READONLY) is not healthy. */
  async health(): Promise<StoreHealth> {
    try {
      await withTimeout(probeWrites(this.client, this.keyPrefix), Math.max(this.timeoutMs, 250), "health probe");
      return { ok: true, store: this.kind };
    } catch (error) {
      const connection = this.client.status !== "ready" && this.dataLoss.lastConnectionError ? ` (connecting: ${this.dataLoss.lastConnectionError})` : "";
      return { ok: false, store: this.kind, detail: `${this.client.status}: ${(error as Error).message}${connection}` };
    }
  }

  /**
   * A call that may have granted lease `leaseId` failed for its caller: release the lease (and
   * leave the waiter queue, for an acquire that `queued`), in the background until Redis
   * answers. Not for a call shed before it was sent: nothing to undo, and more calls are the
   * last thing an overload needs.
   */
  private undoLease(key: string, stack: Stack, leaseId: string, leaseMs: number, error: unknown, queued: boolean): void {
    if (error instanceof OverloadedError) return;
    const release = () => this.calls.run("release", key, stack, [leaseId]);
    const leaveThenRelease = async () => {
      await this.calls.run("leave", key, stack, [leaseId]);
      return release();
    };
    this.undo.add(`release of lease ${leaseId} (its caller got an error)`, queued ? leaveThenRelease : release, leaseMs);
  }

  /** Calls in flight, waiting for a slot, and shed so far (read by /metrics). */
  callCounts(): CallCounts {
    return this.calls.counts();
  }

  async close(): Promise<void> {
    this.waiters.close();
    this.undo.close();
    // A shared client stays as it was, without this store's listeners. Its data-loss guard is
    // the client's, shared by every store on it (dataLossGuardFor): it ends with the client.
    this.subscriptions.close();
    if (!this.ownsClient) return;
    this.dataLoss.close();
    await withTimeout(this.client.quit(), 500, "QUIT").catch(() => this.client.disconnect());
  }

  /** Before a lease is granted: waits for the data to be verified after a reconnect; >0 while fenced after a loss. */
  private async leaseFenceMs(policies: readonly Policy[]): Promise<number> {
    await this.dataLoss.beforeGrant();
    return this.dataLoss.fencedMs(policies);
  }
}
