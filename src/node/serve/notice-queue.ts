import type { NotifyConfig } from "../../notify/config.js";
import type { Notice } from "../../notify/notifier.js";
import { postNotice, retryable } from "../../notify/webhook.js";

export interface NoticeQueueOptions {
  /** Notices waiting at most; one more is dropped with a log line (default 1000). */
  maxQueued?: number;
  /** POSTs under way at most (default 4). */
  concurrency?: number;
  /** Tries per notice, the first included (default 4). */
  attempts?: number;
  /** The wait before the first retry, doubled for each next one (default 500 ms). */
  retryDelayMs?: number;
  /** Where drops are said, one JSON line each (default console.warn). */
  log?: (line: string) => void;
  fetchImpl?: typeof fetch;
}

interface Queued {
  notice: Notice;
  config: NotifyConfig;
  attempt: number;
}

/**
 * `spillway serve`'s notice sender (SPEC §2 "Notify"): a bounded queue with a few POSTs at a
 * time and retries with backoff. Never on a request's path: `send` only enqueues, and a dead
 * webhook costs a log line per dropped notice, nothing else.
 */
export class NoticeQueue {
  private readonly queue: Queued[] = [];
  private active = 0;
  private readonly options: Required<Omit<NoticeQueueOptions, "fetchImpl">> & { fetchImpl?: typeof fetch };
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private closed = false;
  /** Notices POSTed with a 2xx, and dropped (queue full, out of tries, or closed). */
  sent = 0;
  dropped = 0;

  constructor(options: NoticeQueueOptions = {}) {
    this.options = { maxQueued: 1000, concurrency: 4, attempts: 4, retryDelayMs: 500, log: console.warn, ...options };
  }

  send(notice: Notice, config: NotifyConfig): void {
    if (this.closed) return this.drop(notice, "the server is shutting down");
    if (this.queue.length >= this.options.maxQueued) return this.drop(notice, `the queue is full (${this.options.maxQueued} waiting)`);
    this.queue.push({ notice, config, attempt: 1 });
    this.pump();
  }

  /** Stops retrying; what is under way finishes. */
  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const item of this.queue.splice(0)) this.drop(item.notice, "the server is shutting down");
  }

  private pump(): void {
    while (this.active < this.options.concurrency && this.queue.length > 0) {
      const item = this.queue.shift()!;
      this.active++;
      postNotice(item.config, item.notice, this.options.fetchImpl)
        .then(
          () => void this.sent++,
          (error: unknown) => this.failed(item, error),
        )
        .finally(() => {
          this.active--;
          this.pump();
        });
    }
  }

  private failed(item: Queued, error: unknown): void {
    const why = (error as Error).message;
    if (this.closed || item.attempt >= this.options.attempts || !retryable(error)) {
      return this.drop(item.notice, `${why} (${item.attempt} ${item.attempt === 1 ? "try" : "tries"})`);
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.closed) return this.drop(item.notice, "the server is shutting down");
      this.queue.push({ ...item, attempt: item.attempt + 1 });
      this.pump();
    }, this.options.retryDelayMs * 2 ** (item.attempt - 1));
    timer.unref();
    this.timers.add(timer);
  }

  private drop(notice: Notice, reason: string): void {
    this.dropped++;
    this.options.log(JSON.stringify({ level: "warn", event: "notify-dropped", notice: notice.event, policy: notice.policy, key: notice.key, reason }));
  }
}
