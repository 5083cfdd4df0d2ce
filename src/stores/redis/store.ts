import { concurrencyPolicies, stackLeaseMs } from "../../core/concurrency.js";
import { sleep } from "../../core/sleep.js";
import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, CreditsResult, Decision, ExtendResult, Policy, ReleaseResult } from "../../core/types.js";
import { assertCreditsChange, creditsAnswer, pastBalanceCap } from "../../core/credits.js";
import { storeCheckOptions } from "../../core/check-options.js";
import { storePolicies } from "../../core/store-policies.js";
import { assertDebitCost, assertDebitable } from "../../core/debit.js";
import { type CallCounts, type Limiter, OverloadedError, type StoreHealth, StoreUnavailableError, newLeaseId } from "../../core/limiter.js";
import { CallQueue } from "../call-queue.js";
import { type IntegerReply, decodeAcquireAttempt, decodeDecision, decodeSingleDecision, decodeStackDecision } from "./codec.js";
import type { ClusterWriteCoalescer, WriteCoalescer } from "./coalesce.js";
import { Deadlines, withTimeout } from "./errors.js";
import { DEFAULT_KEY_PREFIX, escapeUserKey, validateKeyPrefix } from "./keys.js";
import { type ScriptRunner, runnerFor } from "./run.js";
import type { RedisClient, ScriptName } from "./scripts.js";
import { Subscriptions } from "./client-events.js";
import { CONNECTING, settledConnection } from "./connection.js";
import { describeConnectionError, redactRedisUrl } from "./connection-errors.js";
import { type Stack, argsAt, stackOf } from "./stacks.js";
import { LeaseUndo, unanswered } from "./undo.js";
import { LeaseWaiters } from "./waiters.js";
import { RedisOverrideTable } from "./overrides.js";
import { DEFAULT_POLL_INTERVAL_MS, DEFAULT_TIMEOUT_MS, type RedisStoreOptions, checkConnectionShape, createClient, positiveNumber } from "./options.js";
import { SentinelErrors, type SentinelStoreOptions, sentinelTarget } from "./sentinel.js";
import { type DataLossGuard, dataLossGuardFor, fencedDecision } from "./data-loss.js";
import { probeWrites } from "./nodes.js";
import { assertClaimArgs } from "../notice-claims.js";

export { DEFAULT_POLL_INTERVAL_MS, DEFAULT_TIMEOUT_MS, REDIS_CLIENT_OPTIONS, type RedisStoreOptions } from "./options.js";

/*
 * Two reply protocols for a check, chosen in RedisStore.check:
 *
 * - One policy without leases (the usual request): single.lua admits and writes, and answers
 *   whether it admitted, the clock and the state it read; Node computes the decision from
 *   those with src/core (decodeSingleDecision) and holds it to Lua's admission.
 * - A stack, or a policy with leases: check.lua decides in full with decide.lua, and Node
 *   rebuilds the decision from its numbers (decodeDecision).
 *
 * Both stay for now: check.lua serves every stack and lease (reserve, peeks, the waiter
 * queue), the first protocol only the usual request. A prototype of the first protocol for
 * stacks without leases spent less Redis time per decision than check.lua on every stack
 * (BENCHMARKS.md, "Redis reply protocol"), so moving those stacks over is the next step; a
 * stack with a concurrency policy also needs the waiter queue and the lease decided where
 * the state is, which check.lua does. Redis's time is the ceiling of a whole deployment
 * (README, "Redis mode"), so the protocol is chosen by it.
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
  /** How this client runs scripts, shared by every store on it. */
  private readonly runner: ScriptRunner;
  private readonly ownsClient: boolean;
  private readonly keyPrefix: string;
  private readonly clockMs: (() => number) | undefined;
  private readonly expirySlackMs: number;
  private readonly timeoutMs: number;
  /**
   * How long after it is sent a balance's spend, top-up or debit may still act (its deadline): the
   * timeout less a guard for its answer's way back, so that an answer that acted reaches this
   * process before it gives up (Deadlines waits at least timeoutMs from the write).
   */
  private readonly deadlineBudgetMs: number;
  private readonly waiterTtlMs: number;
  private readonly channel: string;
  private readonly waiters: LeaseWaiters;
  private readonly log: (line: string) => void;
  private readonly deadlines: Deadlines;
  /** Bounds the calls in flight; the rest wait here, and the wait never counts against timeoutMs. */
  private readonly calls: CallQueue;
  /** Frees in the background the leases no caller holds (an unanswered release or acquire). */
  private readonly undo: LeaseUndo;
  /** Coalesces the client's writes under load (shared by every store on the client), unless turned off. */
  private readonly coalescer: WriteCoalescer | ClusterWriteCoalescer | undefined;
  private available = true;
  #overrides: RedisOverrideTable | undefined;
  /** Notices a Redis that lost its data, and fences concurrency grants after it (data-loss.ts). */
  private readonly dataLoss: DataLossGuard;
  /** The wait for a connection under way that calls made meanwhile share (sendWhenConnected). */
  private connecting: Promise<void> | undefined;
  /** Whether the client has ever been ready: until then a call waits for the connection (connectWaitMs). */
  private everReady = false;
  /** How long calls made before the first connection wait for it: the client's connect timeout. */
  private readonly connectWaitMs: number;
  /** Where this store connects, for messages (password hidden). */
  private readonly target: string | undefined;
  #connectionError: string | undefined;
  /** The option that the last connection error blames, when retrying cannot fix it ("name": no such Sentinel master). */
  #connectionErrorField: "name" | "sentinels" | undefined;
  /** This store's listeners on its client, shared with other stores on it (client-events.ts). */
  private readonly subscriptions = new Subscriptions();

  constructor(options: RedisStoreOptions) {
    checkConnectionShape(options);
    this.ownsClient = !options.client;
    this.client = options.client ?? createClient(options);
    this.target = targetOf(options);
    // Reported through ready(), health(), the log and each call's error instead.
    // (A client of its own keeps this listener past close: its QUIT may still end in an error.)
    if (this.ownsClient) this.watchConnectionErrors(options);
    this.subscriptions.on(this.client, "ready", () => {
      this.#connectionError = undefined;
      this.#connectionErrorField = undefined;
      this.everReady = true;
      // Maybe another server now (a failover): its clock is measured afresh.
      this.runner.serverClock.forget();
    });
    this.everReady = this.client.status === "ready";
    this.runner = runnerFor(this.client);
    this.kind = this.runner.isCluster ? "redis-cluster" : "sentinels" in this.client.options && this.client.options.sentinels ? "redis-sentinel" : "redis";
    this.keyPrefix = validateKeyPrefix(options.keyPrefix ?? DEFAULT_KEY_PREFIX);
    this.clockMs = options.clock === "client" ? (options.clockMs ?? Date.now) : undefined;
    this.expirySlackMs = positiveNumber("clientExpirySlackMs", options.clientExpirySlackMs ?? 1000, 0);
    this.timeoutMs = positiveNumber("timeoutMs", options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 1);
    this.deadlineBudgetMs = this.timeoutMs - Math.min(10, this.timeoutMs / 5);
    this.connectWaitMs = Math.max(this.timeoutMs, connectTimeoutOf(this.client));
    const pollIntervalMs = positiveNumber("pollIntervalMs", options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS, 1);
    // A waiter that stopped polling (its process died) is dropped after a few missed polls.
    this.waiterTtlMs = Math.max(1000, 4 * pollIntervalMs);
    this.channel = `${this.keyPrefix}wake`;
    this.waiters = new LeaseWaiters({ client: this.client, channel: this.channel, pollIntervalMs });
    this.log = options.log ?? ((line) => console.warn(line));
    if (options.coalesceWrites !== undefined && typeof options.coalesceWrites !== "boolean") throw new TypeError(`coalesceWrites must be true or false, got ${String(options.coalesceWrites)}`);
    if (options.coalesceWrites !== false) this.coalescer = this.runner.coalescer;
    this.calls = new CallQueue({
      maxInFlight: options.maxInFlight,
      maxQueued: options.maxQueued,
      queueTimeoutMs: options.queueTimeoutMs,
      onShedding: (shedding, detail) => this.log(shedding ? `spillway: overloaded, shedding store calls with 503: ${detail}` : `spillway: no longer shedding: ${detail}`),
    });
    this.undo = new LeaseUndo({ log: this.log });
    const dataCheckIntervalMs = positiveNumber("dataCheckIntervalMs", options.dataCheckIntervalMs ?? 1000, 10);
    this.dataLoss = dataLossGuardFor({ client: this.client, keyPrefix: this.keyPrefix, store: this.kind, waitMs: Math.max(4 * this.timeoutMs, 250), checkIntervalMs: dataCheckIntervalMs, log: this.log });
    this.deadlines = new Deadlines(this.timeoutMs, (error) => {
      // Every call that took a slot ends here, once: its caller was told.
      this.calls.done();
      if (error === undefined) {
        if (!this.available) this.markAvailable(true);
      } else if (error instanceof StoreUnavailableError) this.markAvailable(false, error.message);
    }, (then) => this.coalescer?.afterHeldWrites(then) ?? false, () => this.coalescer?.sentNow() ?? false);
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
    return this.#connectionError;
  }

  /**
   * The option the last connection error blames when no retry can fix it: `"name"` when
   * every sentinel that answered knows no master of that name. Undefined otherwise.
   */
  get connectionErrorField(): "name" | "sentinels" | undefined {
    return this.#connectionErrorField;
  }

  /** Keeps why the last attempt failed, said for the way this store connects. */
  private watchConnectionErrors(options: RedisStoreOptions): void {
    if (options.sentinels === undefined) {
      this.client.on("error", (error: Error) => (this.#connectionError = describeConnectionError(error, this.target)));
      return;
    }
    const sentinel = new SentinelErrors(options as SentinelStoreOptions);
    this.client.on("sentinelError", (error: Error) => sentinel.sentinelFailed(error));
    this.client.on("error", (error: Error) => {
      const trouble = sentinel.roundFailed(error);
      this.#connectionError = trouble?.message ?? describeConnectionError(error, undefined).replace("cannot connect to Redis", `cannot connect to Redis ${this.target}`);
      this.#connectionErrorField = trouble?.field;
    });
  }

  /**
   * Resolves true once connected (at most `timeoutMs` of waiting), false if not yet: then
   * `connectionError` says why, and the store's log has said it once.
   */
  async ready(timeoutMs = 2000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.client.status !== "ready") {
      if (Date.now() >= deadline) {
        this.log(`spillway: ${this.kind} not connected after ${timeoutMs} ms: ${this.#connectionError ?? `still ${this.client.status}${this.target ? ` (${this.target.startsWith("master ") ? this.target : redactRedisUrl(this.target)})` : ""}`}`);
        return false;
      }
      await sleep(10);
    }
    await this.prepared(Math.max(1, deadline - Date.now()));
    return true;
  }

  /** Connected: the script library loaded too (ScriptRunner.prepare), waited for at most `waitMs`. */
  private prepared(waitMs: number): Promise<void> {
    // Redis's clock too, which the first spend, top-up or debit needs (withDeadline).
    return withTimeout(Promise.all([this.runner.prepare(), this.runner.serverClock.sample()]), waitMs, "library load").then(
      () => {},
      () => {},
    );
  }

  check(key: string, policies: readonly Policy[], options?: CheckOptions): Promise<Decision> {
    return this.decide(key, policies, storeCheckOptions(options), false);
  }

  /** A check, or a peek (`peek`: reports, starts no block: check.lua's mode "peek"). */
  private async decide(key: string, policies: readonly Policy[], options: CheckOptions, peek: boolean): Promise<Decision> {
    // A policy as written in a config is parsed, garbage refused (Lua would answer an error).
    policies = storePolicies(policies);
    const stack = stackOf(policies);
    // The client clock's reading, when the store uses it: the script and the decoding share it.
    const clientNowMs = this.clockMs?.();
    if (stack.single) {
      // One policy without leases: single.lua decides admission, the core computes the rest.
      const reply = (await this.runSingle(key, stack, options, clientNowMs)) as string;
      // A credits answer's TIME tells Redis's clock, which its deadlines need (server-clock.ts).
      if (stack.credits && clientNowMs === undefined) this.observeClock(reply);
      return decodeSingleDecision(reply, policies[0]!, options, clientNowMs);
    }
    if (stack.stepped && !peek && options.mode === "reject" && options.cost > 0) {
      // Several plain limits (an Envoy request's descriptors, a route's two limits): stack.lua.
      const reply = (await this.run("stack", key, stack, options.cost === 1 ? [] : [options.cost], clientNowMs)) as string;
      // "r": a stored state of another algorithm (a redefined policy): check.lua sorts it out.
      if (reply !== "r") return decodeStackDecision(reply, policies, options, clientNowMs);
    }
    const leaseId = options.cost > 0 && stack.concurrency ? newLeaseId() : "";
    if (leaseId) {
      const fencedMs = await this.leaseFenceMs(policies);
      if (fencedMs > 0) return fencedDecision(await this.peek(key, policies), policies, fencedMs);
    }
    // Arguments the script would not read are left out (every argument costs Redis time):
    // a plain check sends only its cost.
    const args = leaseId
      ? [options.cost, options.mode, options.maxWaitMs, leaseId]
      : options.mode === "reserve"
        ? [options.cost, options.mode, options.maxWaitMs]
        : peek
          ? [0, "peek"]
          : [options.cost];
    let reply: string;
    try {
      reply = (await this.run("check", key, stack, args)) as string;
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

  async debit(key: string, policies: readonly Policy[], cost: number): Promise<Decision> {
    policies = storePolicies(policies);
    assertDebitable(policies);
    assertDebitCost(cost);
    return decodeDecision((await this.run("debit", key, stackOf(policies), [cost])) as string, policies, "");
  }

  async reset(key: string, policies: readonly Policy[]): Promise<void> {
    policies = storePolicies(policies);
    await this.run("reset", key, stackOf(policies), []);
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
          return decodeAcquireAttempt((await this.run("acquire", key, stack, [waiterId, leaseArg, mayWait ? "1" : "0", this.waiterTtlMs])) as IntegerReply, policies, waiterId, grantedMs);
        },
        leave: async (waiterId) => (await this.run("leave", key, stack, [waiterId])) as number,
        abandon: (waiterId, error) => this.undoLease(key, stack, waiterId, grantedMs, error, true),
      },
      options.maxWaitMs,
    );
  }

  async release(key: string, policies: readonly Policy[], leaseId: string): Promise<ReleaseResult> {
    policies = storePolicies(policies);
    const stack = stackOf(policies);
    try {
      return { released: (await this.run("release", key, stack, [leaseId])) === 1 };
    } catch (error) {
      // The caller is told, and the lease is still freed as soon as Redis answers.
      if (unanswered(error)) this.undo.add(`release of lease ${leaseId}`, () => this.run("release", key, stack, [leaseId]), stackLeaseMs(policies));
      throw error;
    }
  }

  async extend(key: string, policies: readonly Policy[], leaseId: string, leaseMs?: number): Promise<ExtendResult> {
    policies = storePolicies(policies);
    const lengthMs = leaseMs ?? stackLeaseMs(policies);
    return { extended: (await this.run("extend", key, stackOf(policies), [leaseId, lengthMs])) === 1, leaseMs: lengthMs };
  }

  async credits(key: string, policy: Policy, change: CreditsChange): Promise<CreditsResult> {
    const [checked] = storePolicies([policy]);
    assertCreditsChange(checked!, change);
    const [op, amount] = "add" in change ? ["add", change.add] : ["set", change.set];
    const reply = (await this.run("balance", key, stackOf([checked!]), [op, amount])) as number | string;
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
    const release = () => this.run("release", key, stack, [leaseId]);
    const leaveThenRelease = async () => {
      await this.run("leave", key, stack, [leaseId]);
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

  /**
   * Runs one entry script for (key, stack): one FCALL (or EVALSHA of a script built for the
   * stack's algorithms), so exactly one round trip in the steady state, bounded by
   * timeoutMs. Answers the script's raw reply. `clientNowMs`: the client clock's reading for
   * this call, when the caller needs it too (default: read here).
   */
  private run(name: ScriptName, key: string, stack: Stack, extraArgs: readonly (string | number)[], clientNowMs = this.clockMs?.()): Promise<unknown> {
    const base = `${this.keyPrefix}{${escapeUserKey(key)}}:`;
    const names = stack.names;
    const keys: string[] = new Array(names.length);
    for (let i = 0; i < names.length; i++) keys[i] = base + names[i];
    // The waiter keys, and the channel that wakes waiters, go only to scripts that may touch
    // them (every key and argument costs Redis time): a check touches waiters only for a stack
    // with a concurrency policy, extend and debit never.
    const waiters = name !== "extend" && name !== "debit" && name !== "stack" && (name !== "check" || stack.concurrency);
    if (waiters) keys.push(`${base}~queue`, `${base}~waiters`);
    const args: (string | number)[] = [clientNowMs === undefined ? "" : `${clientNowMs}:${this.expirySlackMs}`];
    // A balance's spend, top-up or debit must do nothing once its caller gave up: ARGV[1], the
    // clock, carries a deadline. A rate policy's call carries none: counted late, it only costs
    // later callers capacity (the safe side), and a late debit counts what was served.
    const clockAt = name === "balance" || stack.credits ? 0 : undefined;
    // A calendar's boundaries around this process's clock; the script picks by the store's.
    const policyArgs = stack.calendar ? argsAt(stack, clientNowMs ?? Date.now()) : stack.args;
    for (let i = 0; i < policyArgs.length; i++) args.push(policyArgs[i]!);
    if (waiters) args.push(this.channel);
    for (let i = 0; i < extraArgs.length; i++) args.push(extraArgs[i]!);
    return this.send(name, stack, keys, args, clockAt);
  }

  /**
   * single.lua for (key, a stack of one policy without leases): the usual request, so only
   * the arguments that differ from their usual value are sent (see single.lua).
   */
  private runSingle(key: string, stack: Stack, options: CheckOptions, clientNowMs: number | undefined): Promise<unknown> {
    const keys = [`${this.keyPrefix}{${escapeUserKey(key)}}:${stack.names[0]!}`];
    // stack.args is [N, the policy]: single.lua takes the policy alone.
    const args: (string | number)[] = [(stack.calendar ? argsAt(stack, clientNowMs ?? Date.now()) : stack.args)[1]!];
    // A credits spend carries a deadline in its clock (ARGV[5], "" for the server's own): every argument then.
    if (clientNowMs !== undefined || stack.credits) args.push(options.cost, options.mode, options.maxWaitMs, clientNowMs === undefined ? "" : `${clientNowMs}:${this.expirySlackMs}`);
    else if (options.mode === "reserve") args.push(options.cost, options.mode, options.maxWaitMs);
    else if (options.cost !== 1) args.push(options.cost);
    return this.send("single", stack, keys, args, stack.credits ? 4 : undefined);
  }

  /** One call: at once when a slot is free (the usual case), else when one frees up, FIFO (or shed). */
  private send(name: ScriptName, stack: Stack, keys: readonly string[], args: readonly (string | number)[], clockAt: number | undefined): Promise<unknown> {
    if (this.calls.tryTake()) return this.sendNow(name, stack, keys, args, clockAt);
    return this.calls.wait(() => this.sendNow(name, stack, keys, args, clockAt));
  }

  /**
   * One FCALL (or EVALSHA) on a slot taken, bounded by timeoutMs, recovering from a missing
   * library or script. Always ends in deadlines.run, whose settlement gives the slot back.
   * `clockAt`: the index of the clock argument of a call that must do nothing once its
   * caller gave up (a balance's spend, top-up or debit): it gets the deadline, in Redis's time.
   */
  private sendNow(name: ScriptName, stack: Stack, keys: readonly string[], args: readonly (string | number)[], clockAt: number | undefined): Promise<unknown> {
    if (this.client.status !== "ready" && CONNECTING.has(this.client.status)) return this.sendWhenConnected(name, stack, keys, args, clockAt);
    if (this.client.status !== "ready" && this.#connectionError) return this.notConnected(name);
    if (clockAt !== undefined) return this.deadlines.run(this.sendDated(name, stack, keys, args, clockAt), name);
    let first: ReturnType<ScriptRunner["send"]>;
    try {
      this.coalescer?.beforeSend();
      first = this.runner.send(name, stack.algorithms, keys, args);
    } catch (error) {
      return this.deadlines.run(Promise.reject(error), name);
    }
    if (!first.recoverable) return this.deadlines.run(first.reply, name);
    return this.deadlines.run(first.reply, name, (error) => this.runner.recover(error, name, stack.algorithms, keys, args));
  }

  /**
   * A call made while a connection is being set up waits for it instead of failing at once:
   * without an offline queue ioredis refuses commands until then. The first connection (the
   * calls right after `new RedisStore`, nobody having awaited ready()) is waited for up to the
   * client's connect timeout, so a store is usable the moment it is built; a reconnection only
   * up to timeoutMs, so an outage costs callers no more than a slow Redis. The call then gets
   * its own timeoutMs; when the wait ends unconnected nothing is sent (no late write nobody was
   * told of) and failMode decides.
   */
  private async sendWhenConnected(name: ScriptName, stack: Stack, keys: readonly string[], args: readonly (string | number)[], clockAt: number | undefined): Promise<unknown> {
    const first = !this.everReady;
    const waitMs = first ? this.connectWaitMs : this.timeoutMs;
    const startedMs = Date.now();
    this.connecting ??= settledConnection(this.client, waitMs).finally(() => (this.connecting = undefined));
    await this.connecting;
    if (this.client.status === "ready") {
      // The first connection is up once its scripts are loaded too, within the same wait.
      if (first) await this.prepared(Math.max(1, waitMs - (Date.now() - startedMs)));
      return this.sendNow(name, stack, keys, args, clockAt);
    }
    if (this.#connectionError) return this.notConnected(name);
    const error = new StoreUnavailableError(`redis ${name} failed: not connected within ${waitMs} ms (${this.client.status})`);
    return this.deadlines.run(Promise.reject(error), name);
  }

  /** single.lua's "<0|1> <sec> <usec> …": Redis's clock when it ran, read now. */
  private observeClock(reply: string): void {
    const first = reply.indexOf(" ", 2);
    const second = reply.indexOf(" ", first + 1);
    const serverMs = Number(reply.slice(2, first)) * 1000 + Number(reply.slice(first + 1, second < 0 ? undefined : second)) / 1000;
    if (Number.isFinite(serverMs)) this.runner.serverClock.observe(serverMs, performance.now());
  }

  /**
   * `args` with the deadline of a call sent at sentMs (performance.now()) in its clock argument:
   * Redis's time at sentMs + deadlineBudgetMs, which is before this store gives up on it
   * (its timeout counts from the write, later still). Undefined while Redis's clock is unknown.
   */
  private withDeadline(args: readonly (string | number)[], clockAt: number, sentMs: number): (string | number)[] | undefined {
    const deadlineMs = this.runner.serverClock.serverMsAt(sentMs + this.deadlineBudgetMs);
    if (deadlineMs === undefined) return undefined;
    const dated = args.slice();
    dated[clockAt] = `${args[clockAt]}@${deadlineMs}`;
    return dated;
  }

  /**
   * A call that carries a deadline (sendNow's `clockAt`), inside its caller's deadlines.run.
   * The deadline counts from the call's write, as this store's timeout does: time queued here,
   * spent connecting, or in a turn whose writes the coalescer holds (a burst of requests parsed
   * in one long turn) is not the store's, so a held call waits for the held writes to go out and
   * is then written at once. Recovers from a missing library or script as sendNow does (the retry
   * carries the same deadline, so it can never act late).
   */
  private async sendDated(name: ScriptName, stack: Stack, keys: readonly string[], args: readonly (string | number)[], clockAt: number): Promise<unknown> {
    if (this.coalescer) await new Promise<void>((resolve) => this.coalescer!.afterHeldWrites(resolve) || resolve());
    const sentMs = performance.now();
    let dated = this.withDeadline(args, clockAt, sentMs);
    if (dated === undefined) {
      // Redis's clock not read for a while (the first such call): one TIME first, the deadline still from sentMs.
      await this.runner.serverClock.sample();
      dated = this.withDeadline(args, clockAt, sentMs);
      if (dated === undefined) throw new StoreUnavailableError(`redis ${name} failed: Redis's clock could not be read (TIME), and this call must carry a deadline`);
    }
    const sent = dated;
    const first = this.runner.send(name, stack.algorithms, keys, sent);
    return first.recoverable ? first.reply.catch((error: unknown) => this.runner.recover(error, name, stack.algorithms, keys, sent)) : first.reply;
  }

  /** A call while disconnected fails with why (ioredis alone says "Stream isn't writeable …"). */
  private notConnected(name: ScriptName): Promise<unknown> {
    return this.deadlines.run(Promise.reject(new StoreUnavailableError(`redis ${name} failed: ${this.#connectionError}`)), name);
  }

  /** Before a lease is granted: waits for the data to be verified after a reconnect; >0 while fenced after a loss. */
  private async leaseFenceMs(policies: readonly Policy[]): Promise<number> {
    await this.dataLoss.beforeGrant();
    return this.dataLoss.fencedMs(policies);
  }

  /** Logs changes of availability once, not once per call. */
  private markAvailable(available: boolean, detail = ""): void {
    if (available === this.available) return;
    this.available = available;
    this.log(available ? `spillway: ${this.kind} store available again` : `spillway: ${this.kind} store unavailable: ${detail}`);
  }
}

/** The client's connect timeout (ioredis's default is 10 s; REDIS_CLIENT_OPTIONS sets 1 s). */
function connectTimeoutOf(client: RedisClient): number {
  const options = client.options as { connectTimeout?: number; redisOptions?: { connectTimeout?: number } };
  const ms = options.connectTimeout ?? options.redisOptions?.connectTimeout ?? 10_000;
  return Number.isFinite(ms) && ms > 0 ? ms : 10_000;
}

/** Where the store connects, for messages: its URL, its Cluster's first startup node, or its Sentinel master. */
function targetOf(options: RedisStoreOptions): string | undefined {
  if (options.url !== undefined) return options.url;
  if (options.sentinels !== undefined) return sentinelTarget(options as SentinelStoreOptions);
  const first = options.clusterNodes?.[0];
  if (typeof first === "string") return first;
  if (typeof first === "number") return `redis://127.0.0.1:${first}`;
  return first ? `redis://${first.host ?? "127.0.0.1"}:${first.port ?? 6379}` : undefined;
}

