import type { NotifyConfig } from "../../notify/config.js";
import type { Notice } from "../../notify/notifier.js";
import { failureReason, postNotice, retryable } from "../../notify/webhook.js";

export interface NoticeQueueOptions {
  /** Notices waiting at most, over every policy; past it one is dropped with a log line (default 1000). */
  maxQueued?: number;
  /** POSTs under way at most (default 4). */
  concurrency?: number;
  /** Tries per notice, the first included (default 4). */
  attempts?: number;
  /** The wait before the first retry, doubled for each next one (default 500 ms). */
  retryDelayMs?: number;
  /** Where drops are said, one JSON line each (default console.warn). */
  log?: (line: string) => void;
  /**
   * Told of a notice dropped before its first try (the queue had no room, or the server is
   * stopping): it gives back its claim, so a later decision may claim and send it again.
   */
  unsent?: (notice: Notice) => void;
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
 *
 * Shared fairly between policies: each has its own line, POSTs take from each line in turn,
 * and a full queue makes room by dropping from the longest line. A flood of keys on one
 * policy (an unauthenticated route's) then neither delays nor pushes out another policy's
 * notices; within one policy, a notice dropped unsent gives back its claim (`unsent`).
 */
export class NoticeQueue {
  /** Waiting notices by policy; the Map's order is the turn (a line served goes to the end). */
  private readonly lines = new Map<string, Queued[]>();
  private queued = 0;
  private active = 0;
  private readonly options: Required<Omit<NoticeQueueOptions, "fetchImpl" | "unsent">> & Pick<NoticeQueueOptions, "fetchImpl" | "unsent">;
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private closed = false;
  /** Notices POSTed with a 2xx, and dropped (queue full, out of tries, or closed). */
  sent = 0;
  dropped = 0;

  constructor(options: NoticeQueueOptions = {}) {
    this.options = { maxQueued: 1000, concurrency: 4, attempts: 4, retryDelayMs: 500, log: console.warn, ...options };
  }

  /** Notices waiting (retries included). */
  get size(): number {
    return this.queued;
  }

  send(notice: Notice, config: NotifyConfig): void {
    if (this.closed) return this.drop(notice, "the server is shutting down", true);
    if (this.queued >= this.options.maxQueued && !this.makeRoomFor(notice.policy)) return this.drop(notice, this.fullReason(), true);
    this.enqueue({ notice, config, attempt: 1 });
    this.pump();
  }

  /** Stops retrying; what is under way finishes. */
  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const line of this.lines.values()) for (const item of line) this.drop(item.notice, "the server is shutting down", item.attempt === 1);
    this.lines.clear();
    this.queued = 0;
  }

  private enqueue(item: Queued): void {
    const line = this.lines.get(item.notice.policy);
    if (line) line.push(item);
    else this.lines.set(item.notice.policy, [item]);
    this.queued++;
  }

  /**
   * Full: the newest notice of the longest line goes (unsent, so its claim is given back), unless
   * the newcomer's own line is that long already: then the newcomer is the one dropped.
   */
  private makeRoomFor(policy: string): boolean {
    let longest: Queued[] | undefined;
    for (const line of this.lines.values()) if (!longest || line.length > longest.length) longest = line;
    const own = this.lines.get(policy)?.length ?? 0;
    if (!longest || longest.length <= own + 1) return false;
    const evicted = longest.pop()!;
    this.queued--;
    this.drop(evicted.notice, this.fullReason(), evicted.attempt === 1);
    return true;
  }

  private fullReason(): string {
    return `the queue is full (${this.options.maxQueued} waiting)`;
  }

  /** The next notice, one policy's line after another's. */
  private next(): Queued | undefined {
    for (const [policy, line] of this.lines) {
      const item = line.shift()!;
      this.lines.delete(policy);
      if (line.length > 0) this.lines.set(policy, line);
      this.queued--;
      return item;
    }
    return undefined;
  }

  private pump(): void {
    while (this.active < this.options.concurrency) {
      const item = this.next();
      if (!item) return;
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
    const why = failureReason(error);
    if (this.closed || item.attempt >= this.options.attempts || !retryable(error)) {
      return this.drop(item.notice, `${why} (${item.attempt} ${item.attempt === 1 ? "try" : "tries"})`, false);
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.closed) return this.drop(item.notice, "the server is shutting down", false);
      this.enqueue({ ...item, attempt: item.attempt + 1 });
      this.pump();
    }, this.options.retryDelayMs * 2 ** (item.attempt - 1));
    timer.unref();
    this.timers.add(timer);
  }

  /** `unsent`: it never reached the webhook, so its claim goes back (a later decision may send it). */
  private drop(notice: Notice, reason: string, unsent: boolean): void {
    this.dropped++;
    const line: Record<string, unknown> = { level: "warn", event: "notify-dropped", notice: notice.event, policy: notice.policy, key: notice.key, reason };
    if (unsent && this.options.unsent) {
      line.claim = "given back";
      this.options.unsent(notice);
    }
    this.options.log(JSON.stringify(line));
  }
}
