// The Redis store's call path: its connection's state, and each call as one FCALL (EVALSHA before Redis 7) through the call queue, bounded by its timeout, with a deadline for a balance's calls.
import { sleep } from "../../core/sleep.js";
import type { CheckOptions } from "../../core/types.js";
import { type CallCounts, StoreUnavailableError } from "../../core/limiter.js";
import { CallQueue } from "../call-queue.js";
import type { ClusterWriteCoalescer, WriteCoalescer } from "./coalesce.js";
import { Deadlines, withTimeout } from "./errors.js";
import { escapeUserKey } from "./keys.js";
import { type ScriptRunner, runnerFor } from "./run.js";
import type { RedisClient, ScriptName } from "./scripts.js";
import type { Subscriptions } from "./client-events.js";
import { CONNECTING, ConnectionWatch, connectTimeoutOf } from "./connection.js";
import { type Stack, argsAt } from "./stacks.js";
import { DEFAULT_TIMEOUT_MS, type RedisStoreOptions, positiveNumber } from "./options.js";

/** What a store hands its call path: the client, whether it is the store's own, the store's listeners on it, its log. */
export interface CallsSetup {
  readonly client: RedisClient;
  readonly ownsClient: boolean;
  readonly keyPrefix: string;
  readonly subscriptions: Subscriptions;
  readonly log: (line: string) => void;
}

/**
 * The calls of one RedisStore: every entry script goes through `run` (or `runSingle`), one
 * round trip in the steady state, bounded by timeoutMs, waiting for a connection under way,
 * and failing with why while disconnected. Logs changes of availability once.
 */
export class RedisCalls {
  /** "redis" (standalone), "redis-cluster", or "redis-sentinel" (a master found through its sentinels). */
  readonly kind: "redis" | "redis-cluster" | "redis-sentinel";
  readonly timeoutMs: number;
  /** How this client runs scripts, shared by every store on it. */
  readonly runner: ScriptRunner;
  private readonly client: RedisClient;
  private readonly keyPrefix: string;
  private readonly clockMs: (() => number) | undefined;
  private readonly expirySlackMs: number;
  /**
   * How long after it is sent a balance's spend, top-up or debit may still act (its deadline): the
   * timeout less a guard for its answer's way back, so that an answer that acted reaches this
   * process before it gives up (Deadlines waits at least timeoutMs from the write).
   */
  private readonly deadlineBudgetMs: number;
  /** The channel that wakes a key's lease waiters (waiters.ts). */
  private readonly channel: string;
  private readonly log: (line: string) => void;
  private readonly deadlines: Deadlines;
  /** Bounds the calls in flight; the rest wait here, and the wait never counts against timeoutMs. */
  private readonly queue: CallQueue;
  /** Coalesces the client's writes under load (shared by every store on the client), unless turned off. */
  private readonly coalescer: WriteCoalescer | ClusterWriteCoalescer | undefined;
  private available = true;
  /** The client's connection as this store sees it: why it failed, whether it was ever ready. */
  private readonly connection: ConnectionWatch;
  /** How long calls made before the first connection wait for it: the client's connect timeout. */
  private readonly connectWaitMs: number;

  constructor(setup: CallsSetup, options: RedisStoreOptions) {
    const { client, subscriptions } = setup;
    this.client = client;
    this.keyPrefix = setup.keyPrefix;
    this.log = setup.log;
    // Maybe another server after a (re)connection (a failover): its clock is measured afresh.
    this.connection = new ConnectionWatch(client, options, setup, () => this.runner.serverClock.forget());
    this.runner = runnerFor(client);
    this.kind = this.runner.isCluster ? "redis-cluster" : "sentinels" in client.options && client.options.sentinels ? "redis-sentinel" : "redis";
    this.clockMs = options.clock === "client" ? (options.clockMs ?? Date.now) : undefined;
    this.expirySlackMs = positiveNumber("clientExpirySlackMs", options.clientExpirySlackMs ?? 1000, 0);
    this.timeoutMs = positiveNumber("timeoutMs", options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 1);
    this.deadlineBudgetMs = this.timeoutMs - Math.min(10, this.timeoutMs / 5);
    this.connectWaitMs = Math.max(this.timeoutMs, connectTimeoutOf(client));
    this.channel = `${this.keyPrefix}wake`;
    if (options.coalesceWrites !== undefined && typeof options.coalesceWrites !== "boolean") throw new TypeError(`coalesceWrites must be true or false, got ${String(options.coalesceWrites)}`);
    if (options.coalesceWrites !== false) this.coalescer = this.runner.coalescer;
    this.queue = new CallQueue({
      maxInFlight: options.maxInFlight,
      maxQueued: options.maxQueued,
      queueTimeoutMs: options.queueTimeoutMs,
      onShedding: (shedding, detail) => this.log(shedding ? `spillway: overloaded, shedding store calls with 503: ${detail}` : `spillway: no longer shedding: ${detail}`),
    });
    this.deadlines = new Deadlines(this.timeoutMs, (error) => {
      // Every call that took a slot ends here, once: its caller was told.
      this.queue.done();
      if (error === undefined) {
        if (!this.available) this.markAvailable(true);
      } else if (error instanceof StoreUnavailableError) this.markAvailable(false, error.message);
    }, (then) => this.coalescer?.afterHeldWrites(then) ?? false, () => this.coalescer?.sentNow() ?? false);
  }

  /** Why the last connection attempt failed (RedisStore.connectionError). */
  get connectionError(): string | undefined {
    return this.connection.error;
  }

  /** The option the last connection error blames (RedisStore.connectionErrorField). */
  get connectionErrorField(): "name" | "sentinels" | undefined {
    return this.connection.errorField;
  }

  /** The client clock's reading, when the store uses it (option `clock: "client"`). */
  clientNowMs(): number | undefined {
    return this.clockMs?.();
  }

  /** Calls in flight, waiting for a slot, and shed so far (read by /metrics). */
  counts(): CallCounts {
    return this.queue.counts();
  }

  /**
   * Resolves true once connected (at most `timeoutMs` of waiting), false if not yet: then
   * `connectionError` says why, and the store's log has said it once.
   */
  async ready(timeoutMs = 2000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.client.status !== "ready") {
      if (Date.now() >= deadline) {
        this.log(`spillway: ${this.kind} not connected after ${timeoutMs} ms: ${this.connection.whyNotReady()}`);
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

  /**
   * Runs one entry script for (key, stack): one FCALL (or EVALSHA of a script built for the
   * stack's algorithms), so exactly one round trip in the steady state, bounded by
   * timeoutMs. Answers the script's raw reply. `clientNowMs`: the client clock's reading for
   * this call, when the caller needs it too (default: read here).
   */
  run(name: ScriptName, key: string, stack: Stack, extraArgs: readonly (string | number)[], clientNowMs = this.clockMs?.()): Promise<unknown> {
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
  runSingle(key: string, stack: Stack, options: CheckOptions, clientNowMs: number | undefined): Promise<unknown> {
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
    if (this.queue.tryTake()) return this.sendNow(name, stack, keys, args, clockAt);
    return this.queue.wait(() => this.sendNow(name, stack, keys, args, clockAt));
  }

  /**
   * One FCALL (or EVALSHA) on a slot taken, bounded by timeoutMs, recovering from a missing
   * library or script. Always ends in deadlines.run, whose settlement gives the slot back.
   * `clockAt`: the index of the clock argument of a call that must do nothing once its
   * caller gave up (a balance's spend, top-up or debit): it gets the deadline, in Redis's time.
   */
  private sendNow(name: ScriptName, stack: Stack, keys: readonly string[], args: readonly (string | number)[], clockAt: number | undefined): Promise<unknown> {
    if (this.client.status !== "ready" && CONNECTING.has(this.client.status)) return this.sendWhenConnected(name, stack, keys, args, clockAt);
    if (this.client.status !== "ready" && this.connection.error) return this.notConnected(name);
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
    const first = !this.connection.everReady;
    const waitMs = first ? this.connectWaitMs : this.timeoutMs;
    const startedMs = Date.now();
    await this.connection.settled(waitMs);
    if (this.client.status === "ready") {
      // The first connection is up once its scripts are loaded too, within the same wait.
      if (first) await this.prepared(Math.max(1, waitMs - (Date.now() - startedMs)));
      return this.sendNow(name, stack, keys, args, clockAt);
    }
    if (this.connection.error) return this.notConnected(name);
    const error = new StoreUnavailableError(`redis ${name} failed: not connected within ${waitMs} ms (${this.client.status})`);
    return this.deadlines.run(Promise.reject(error), name);
  }

  /** single.lua's "<0|1> <sec> <usec> …": Redis's clock when it ran, read now. */
  observeClock(reply: string): void {
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
    return this.deadlines.run(Promise.reject(new StoreUnavailableError(`redis ${name} failed: ${this.connection.error}`)), name);
  }

  /** Logs changes of availability once, not once per call. */
  private markAvailable(available: boolean, detail = ""): void {
    if (available === this.available) return;
    this.available = available;
    this.log(available ? `spillway: ${this.kind} store available again` : `spillway: ${this.kind} store unavailable: ${detail}`);
  }
}
