import type { SpillwayConfig } from "../../config/config.js";
import type { Limiter } from "../../core/limiter.js";
import { Notifier } from "../../notify/notifier.js";
import { NotifyingLimiter } from "../../notify/notifying-limiter.js";
import { NoticeQueue, type NoticeQueueOptions } from "./notice-queue.js";

/** `spillway serve`'s notices: the store they are claimed in, the queue that sends them. */
export interface ServeNotify {
  /** The store, showing its notifier every decision. */
  limiter: Limiter;
  /** A reload's config: its `notify` (or none) applies from the next decision on. */
  configure(config: SpillwayConfig): void;
  /** At shutdown: what waits is dropped (with its log line), what is under way finishes. */
  close(): void;
  queue: NoticeQueue;
}

/**
 * Wraps the store so decisions past a policy's warnAt, and first denials, are POSTed to the
 * config's `notify.url` once per (key, policy, window, event) across every process sharing the
 * store (the store's claimNotice decides who sends).
 *
 * @example const notices = serveNotify(await createStore(choice), config); limiter = notices.limiter;
 */
export function serveNotify(store: Limiter, config: SpillwayConfig, log: (line: string) => void = console.warn, queueOptions: Pick<NoticeQueueOptions, "maxQueued"> = {}): ServeNotify {
  let current = config.notify;
  // A notice the queue drops unsent gives back its claim: a flood cannot spend a key's notices.
  const queue = new NoticeQueue({ ...queueOptions, log, unsent: (notice) => notifier.giveBack(notice) });
  const notifier: Notifier = new Notifier({
    config: () => current,
    // A store without claims (a user's own Limiter): this process claims for itself.
    claim: store.claimNotice ? (key, notice, ttlMs) => store.claimNotice!(key, notice, ttlMs) : async () => true,
    send: (notice, notify) => queue.send(notice, notify),
    log,
  });
  return {
    limiter: new NotifyingLimiter(store, notifier),
    configure(next) {
      current = next.notify;
    },
    close: () => queue.close(),
    queue,
  };
}
