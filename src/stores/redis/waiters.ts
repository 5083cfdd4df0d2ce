import type { AcquireResult } from "../../core/types.js";
import { OverloadedError, newLeaseId } from "../../core/limiter.js";
import type { AcquireAttempt } from "./codec.js";
import { isCluster } from "./connection.js";
import { withTimeout } from "./errors.js";
import { unanswered } from "./undo.js";
import type { RedisClient } from "./scripts.js";

/** How long a first waiter waits for its subscription before relying on polls alone. */
const SUBSCRIBE_WAIT_MS = 1000;

export interface WaitCalls {
  /** One attempt of `waiterId`; `mayWait` lets it join the queue. */
  attempt(waiterId: string, mayWait: boolean): Promise<AcquireAttempt>;
  /** Leaves the queue; answers retryAfterMs. */
  leave(waiterId: string): Promise<number>;
  /**
   * The caller does not get the lease, but an attempt that failed for it (`error`: no answer in
   * time, or none at all) may have taken it in Redis: free it, in the background.
   */
  abandon(waiterId: string, error: unknown): void;
}

export interface LeaseWaitersOptions {
  client: RedisClient;
  /** Channel the scripts PUBLISH the head waiter's id on. */
  channel: string;
  /** Fallback poll: a waiter retries at least this often, in case a wake-up is lost. */
  pollIntervalMs: number;
}

/**
 * FIFO waiting for leases across processes. The order lives in Redis (acquire.lua); this
 * class only decides *when* a waiter tries again: at once when a script publishes its id
 * (a release, a reset, the head leaving or taking its lease), when the next held lease
 * expires, and otherwise every pollIntervalMs, which also keeps its queue record alive.
 * No busy polling: one timer per waiter, one subscriber connection per store.
 */
export class LeaseWaiters {
  private readonly options: LeaseWaitersOptions;
  private readonly pokes = new Map<string, () => void>();
  private subscriber: RedisClient | undefined;
  private subscribed: Promise<unknown> | undefined;
  private subscriptionLive = false;
  private closed = false;

  constructor(options: LeaseWaitersOptions) {
    this.options = options;
  }

  async acquire(calls: WaitCalls, maxWaitMs: number): Promise<AcquireResult> {
    const waiterId = newLeaseId();
    const mayWait = maxWaitMs > 0;
    const deadlineMs = performance.now() + maxWaitMs;
    let poked = false;
    let wakeUp: (() => void) | undefined;
    this.pokes.set(waiterId, () => {
      poked = true;
      wakeUp?.();
    });
    // An attempt that failed for us: it may have taken a lease all the same (one that was
    // sent, rather than shed before it was, when there is such an attempt).
    let failedAttempt: unknown;
    const noteFailure = (error: unknown) => {
      if (failedAttempt === undefined || failedAttempt instanceof OverloadedError) failedAttempt = error;
    };
    try {
      let result = await calls.attempt(waiterId, mayWait).catch((error: unknown) => {
        noteFailure(error);
        throw error;
      });
      if (result.status === "queued" && !this.subscriptionLive) {
        await this.subscribe(Math.min(SUBSCRIBE_WAIT_MS, deadlineMs - performance.now()));
        poked = true; // a wake-up may have gone by before the subscription was live
      }
      let lastError: unknown;
      while (result.status === "queued" && !this.closed) {
        const leftMs = deadlineMs - performance.now();
        if (leftMs <= 0) break;
        const untilExpiryMs = result.untilExpiryMs === null ? Number.POSITIVE_INFINITY : Math.max(0, result.untilExpiryMs) + 1;
        if (!poked) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.min(leftMs, this.options.pollIntervalMs, untilExpiryMs));
            wakeUp = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        }
        poked = false;
        wakeUp = undefined;
        if (this.closed || performance.now() >= deadlineMs) break;
        try {
          result = await calls.attempt(waiterId, true);
          lastError = undefined;
        } catch (error) {
          noteFailure(error);
          // Redis is away for a moment (or this process is shedding): keep our place and try again until the deadline.
          if (!unanswered(error)) throw error;
          lastError = error;
        }
      }
      if (result.status === "acquired") {
        const { status: _status, ...lease } = result;
        return { acquired: true, ...lease };
      }
      let answer: AcquireResult;
      if (result.status === "denied") answer = { acquired: false, retryAfterMs: result.retryAfterMs };
      else if (this.closed) answer = { acquired: false, retryAfterMs: null };
      else {
        try {
          answer = { acquired: false, retryAfterMs: await calls.leave(waiterId) };
        } catch (error) {
          throw lastError ?? error;
        }
      }
      if (failedAttempt !== undefined) calls.abandon(waiterId, failedAttempt);
      return answer;
    } catch (error) {
      if (failedAttempt !== undefined) calls.abandon(waiterId, failedAttempt);
      throw error;
    } finally {
      this.pokes.delete(waiterId);
    }
  }

  /** Ends every wait (the store is closing) and drops the subscriber connection. */
  close(): void {
    this.closed = true;
    for (const poke of this.pokes.values()) poke();
    this.subscriber?.disconnect();
    this.subscriber = undefined;
    this.subscriptionLive = false;
  }

  /**
   * Subscribes once per store. Waits a bounded time only: if the subscriber cannot
   * connect, the fallback poll still serves waiters, just later.
   */
  private async subscribe(waitMs: number): Promise<void> {
    if (!this.subscribed) {
      const { client, channel } = this.options;
      // A subscriber may queue its SUBSCRIBE until connected; ioredis resubscribes on reconnect.
      const subscriber: RedisClient =
        isCluster(client) ? client.duplicate(undefined, { enableOfflineQueue: true }) : client.duplicate({ enableOfflineQueue: true });
      subscriber.on("error", () => {});
      subscriber.on("message", (_channel: string, waiterId: string) => this.pokes.get(waiterId)?.());
      this.subscriber = subscriber;
      const subscribed = subscriber.subscribe(channel);
      this.subscribed = subscribed;
      subscribed.then(() => {
        if (this.subscribed === subscribed) this.subscriptionLive = true;
      }, () => {
        // Start over on the next wait rather than keep a subscriber that gave up.
        if (this.subscribed !== subscribed) return;
        this.subscribed = undefined;
        this.subscriber = undefined;
        this.subscriptionLive = false;
        subscriber.disconnect();
      });
    }
    if (waitMs > 0) await withTimeout(this.subscribed, waitMs, "SUBSCRIBE").catch(() => {});
  }
}
