import { assertClaimArgs } from "./notice-claims.js";
import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, CreditsResult, DebitCost, Decision, ExtendResult, Policy, ReleaseResult } from "../core/types.js";
import { type CreditsOutcome, assertCreditsChange, creditsAnswer } from "../core/credits.js";
import { sleep } from "../core/sleep.js";
import { storeCheckOptions } from "../core/check-options.js";
import { checkCosts } from "../core/costs.js";
import { storePolicies } from "../core/store-policies.js";
import { assertDebitCost, assertDebitable, assertSpentAtMs } from "../core/debit.js";
import { type Limiter, OverloadedError, type StoreHealth, StoreUnavailableError } from "../core/limiter.js";
import { type CarriedDebit, DEBIT_CARRY_MS, DebitCarry, type NextCall } from "./debit-carry.js";

/**
 * What one key's Durable Object answers over RPC: the store declares the surface it needs,
 * and the Worker's LimiterObject implements it (so stores/ never imports worker/).
 */
export interface KeyLimiterObject extends Rpc.DurableObjectBranded {
  check(policies: Policy[], options: CheckOptions): Decision;
  peek(policies: Policy[]): Decision;
  /** `cost`: one for every policy, or one per policy (the store sends a list in stack order). */
  debit(policies: Policy[], cost: DebitCost, spentAtMs?: number): Decision;
  /** Applies held debits in order, then answers `next` (if any): one request for both. */
  debitThen(debits: CarriedDebit[], next?: NextCall): { debits: Decision[]; next?: Decision };
  reset(policies: Policy[]): void;
  acquire(policies: Policy[], options: AcquireOptions): Promise<AcquireResult>;
  release(policies: Policy[], leaseId: string): ReleaseResult;
  extend(policies: Policy[], leaseId: string, leaseMs?: number): ExtendResult;
  credits(policy: Policy, change: CreditsChange): CreditsOutcome;
  claimNotice(notice: string, ttlMs: number): boolean;
}

/** The part of a Durable Object namespace binding the store uses: `env.LIMITER` fits it. */
export interface KeyLimiterNamespace {
  getByName(name: string): DurableObjectStub<KeyLimiterObject>;
}

export interface RetryOptions {
  /** Attempts in all, the first included (default 3). */
  attempts: number;
  /** First backoff; doubles each time, with full jitter (default 10 ms). */
  baseDelayMs: number;
  /** Cap on one backoff (default 100 ms). */
  maxDelayMs: number;
}

const DEFAULT_RETRY: RetryOptions = { attempts: 3, baseDelayMs: 10, maxDelayMs: 100 };

/**
 * A release is tried for longer (about 4 s in all, inside a Worker's waitUntil): one that is
 * given up on keeps its slot taken for nobody until the lease expires. Releasing twice is
 * harmless (an unknown lease is a no-op), so an overloaded object is retried too: a release
 * only takes load off it.
 */
export const RELEASE_RETRY: RetryOptions = { attempts: 8, baseDelayMs: 50, maxDelayMs: 1000 };

interface DurableObjectError {
  retryable?: boolean;
  overloaded?: boolean;
}

/**
 * Only errors the runtime marks retryable, and not overloaded ones: retrying an overloaded
 * object makes the overload worse. A retried check may count twice if the first attempt
 * did land, which errs on the side of denying, never of admitting.
 */
export function isRetryable(error: unknown): boolean {
  const flags = error as DurableObjectError | null;
  return Boolean(flags?.retryable) && !flags?.overloaded;
}

/** A release's errors worth another try: the runtime's transient ones, overloaded included. */
export function isReleaseRetryable(error: unknown): boolean {
  const flags = error as DurableObjectError | null;
  return Boolean(flags?.retryable || flags?.overloaded);
}

/** Runs `call` with capped, jittered exponential backoff on errors `retryable` accepts. */
export async function withRetries<T>(call: () => Promise<T>, options: RetryOptions = DEFAULT_RETRY, retryable: (error: unknown) => boolean = isRetryable): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!retryable(error) || attempt >= options.attempts) throw error;
      const ceilingMs = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
      await sleep(Math.random() * ceilingMs);
    }
  }
}

/**
 * The Worker's store: each key is its own LimiterObject (`getByName(key)`). Errors that
 * survive the retries become StoreUnavailableError, so the policy's failMode decides; an
 * object's `overloaded` error becomes OverloadedError (shed with 503, never failed open).
 */
export class DurableObjectStore implements Limiter {
  private readonly namespace: KeyLimiterNamespace;
  private readonly retry: RetryOptions;
  private readonly releaseRetry: RetryOptions;
  private readonly carry: DebitCarry;
  readonly kind = "durable-object";

  /**
   * `namespace`: the LIMITER binding of LimiterObject (or of any class with its RPC surface).
   * `carryMs`: how long a debitLater waits for its key's next call before it goes alone.
   */
  constructor(namespace: KeyLimiterNamespace, retry: RetryOptions = DEFAULT_RETRY, releaseRetry: RetryOptions = RELEASE_RETRY, carryMs = DEBIT_CARRY_MS) {
    this.namespace = namespace;
    this.retry = retry;
    this.releaseRetry = releaseRetry;
    this.carry = new DebitCarry(carryMs, (key, debits) => this.call(key, async (stub) => (await stub.debitThen(debits)).debits));
  }

  async check(key: string, policies: readonly Policy[], options?: CheckOptions): Promise<Decision> {
    // Checked here, not in the object: a TypeError must not become StoreUnavailableError (failMode).
    policies = storePolicies(policies);
    options = checkCosts(storeCheckOptions(options), policies);
    // Costs per policy travel as a list in stack order (checkCosts): the object reads no names.
    const checked: CheckOptions = options.costs === undefined ? { cost: options.cost, mode: options.mode, maxWaitMs: options.maxWaitMs } : { cost: options.cost, mode: options.mode, maxWaitMs: options.maxWaitMs, costs: options.costs };
    return this.carrying(key, { check: [...policies], options: checked }, (stub) => stub.check([...policies], checked));
  }

  async peek(key: string, policies: readonly Policy[]): Promise<Decision> {
    policies = storePolicies(policies);
    return this.carrying(key, { peek: [...policies] }, (stub) => stub.peek([...policies]));
  }

  async debit(key: string, policies: readonly Policy[], debited: DebitCost, spentAtMs?: number): Promise<Decision> {
    // Refused here: a ValidationError thrown in the object would reach us as a failed call.
    policies = storePolicies(policies);
    assertDebitable(policies);
    const cost = assertDebitCost(debited, policies);
    assertSpentAtMs(spentAtMs);
    // A retried debit may count twice if the first attempt landed: it errs on denying.
    // A refund's spend time travels as the Worker read it: the object's clock is Cloudflare's too.
    const next = spentAtMs === undefined ? { debit: [...policies], cost } : { debit: [...policies], cost, spentAtMs };
    return this.carrying(key, next, (stub) => stub.debit([...policies], cost, spentAtMs));
  }

  /**
   * A debit that rides with the key's next check, peek or debit from this store (one object
   * request for both), or goes alone after carryMs: for a cost read from an answer's body,
   * which nobody waits on. Every later call of the key through this store sees it first.
   */
  async debitLater(key: string, policies: readonly Policy[], debited: DebitCost, spentAtMs?: number): Promise<Decision> {
    policies = storePolicies(policies);
    assertDebitable(policies);
    const cost = assertDebitCost(debited, policies);
    assertSpentAtMs(spentAtMs);
    return this.carry.hold(key, spentAtMs === undefined ? { policies: [...policies], cost } : { policies: [...policies], cost, spentAtMs });
  }

  async reset(key: string, policies: readonly Policy[]): Promise<void> {
    policies = storePolicies(policies);
    // Debits held for the key happened before the reset: they land first, and are wiped by it.
    await this.carry.flush(key);
    return this.call(key, (stub) => stub.reset([...policies]));
  }

  async acquire(key: string, policies: readonly Policy[], options: AcquireOptions): Promise<AcquireResult> {
    policies = storePolicies(policies);
    // RPC typing turns a union result into a union of promises; the value is a plain AcquireResult.
    return this.call(key, async (stub) => (await stub.acquire([...policies], { maxWaitMs: options.maxWaitMs, leaseMs: options.leaseMs })) as AcquireResult);
  }

  async release(key: string, policies: readonly Policy[], leaseId: string): Promise<ReleaseResult> {
    policies = storePolicies(policies);
    return this.call(key, (stub) => stub.release([...policies], leaseId), this.releaseRetry, isReleaseRetryable);
  }

  async extend(key: string, policies: readonly Policy[], leaseId: string, leaseMs?: number): Promise<ExtendResult> {
    policies = storePolicies(policies);
    return this.call(key, (stub) => stub.extend([...policies], leaseId, leaseMs));
  }

  /** A notice (config `notify`) claimed in the key's object: every isolate sends it once between them. */
  async claimNotice(key: string, notice: string, ttlMs: number): Promise<boolean> {
    assertClaimArgs(key, notice, ttlMs);
    return this.call(key, (stub) => stub.claimNotice(notice, ttlMs));
  }

  async credits(key: string, policy: Policy, change: CreditsChange): Promise<CreditsResult> {
    // Refused here: a ValidationError thrown in the object would reach us as a failed call.
    const [checked] = storePolicies([policy]);
    assertCreditsChange(checked!, change);
    const plain: CreditsChange = "add" in change ? { add: change.add } : { set: change.set };
    // A retried top-up may land twice if the first attempt did: only runtime-retryable errors are retried.
    return creditsAnswer(await this.call(key, (stub) => stub.credits(checked!, plain)));
  }

  async health(): Promise<StoreHealth> {
    return { ok: true, store: this.kind };
  }

  /** `alone` when the key has no debits held; else one request carries them and then `next`. */
  private carrying(key: string, next: NextCall, alone: (stub: DurableObjectStub<KeyLimiterObject>) => Promise<Decision>): Promise<Decision> {
    const held = this.carry.take(key);
    if (!held) return this.call(key, alone);
    const answered = this.call(key, async (stub) => (await stub.debitThen(held.debits, next)) as { debits: Decision[]; next: Decision });
    held.settle(answered.then((answer) => answer.debits));
    return answered.then((answer) => answer.next);
  }

  private async call<T>(key: string, run: (stub: DurableObjectStub<KeyLimiterObject>) => Promise<T>, retry = this.retry, retryable = isRetryable): Promise<T> {
    try {
      return await withRetries(() => run(this.namespace.getByName(key)), retry, retryable);
    } catch (error) {
      // An overloaded object is shed, never failed open: a burst on one key must not admit it all.
      if ((error as DurableObjectError | null)?.overloaded) throw new OverloadedError(`Durable Object overloaded: ${(error as Error).message}`, { cause: error });
      throw new StoreUnavailableError(`Durable Object call failed: ${(error as Error).message}`, { cause: error });
    }
  }
}
