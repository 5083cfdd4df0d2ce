import { waitUntil } from "cloudflare:workers";
import type { SpillwayConfig } from "../config/config.js";
import type { Limiter } from "../core/limiter.js";
import type { NotifyConfig } from "../notify/config.js";
import { type Notice, Notifier } from "../notify/notifier.js";
import { NotifyingLimiter } from "../notify/notifying-limiter.js";
import { failureReason, postNotice, retryable } from "../notify/webhook.js";

/** Tries per notice on the Worker: waitUntil keeps an invocation alive about 30 s after its answer. */
const ATTEMPTS = 3;
const RETRY_DELAY_MS = 1000;

/**
 * The Worker's store with notices (config `notify`): claimed in the key's Durable Object, so
 * isolates send each once between them, and POSTed under `waitUntil`, after the answer, never
 * delaying it. A notice that fails every try is logged and dropped.
 */
export function notifyingStore(store: Limiter, config: SpillwayConfig): Limiter {
  if (!config.notify) return store;
  const notify = config.notify;
  const notifier = new Notifier({
    config: () => notify,
    claim: store.claimNotice ? (key, notice, ttlMs) => store.claimNotice!(key, notice, ttlMs) : async () => true,
    // The claim answers after the decision, still inside the request that made it: waitUntil
    // holds the invocation for the POST.
    send: (notice, target) => waitUntil(sendWithRetries(target, notice)),
    log: (line) => console.warn(line),
  });
  return new NotifyingLimiter(store, notifier);
}

async function sendWithRetries(config: NotifyConfig, notice: Notice): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await postNotice(config, notice);
      return;
    } catch (error) {
      if (attempt >= ATTEMPTS || !retryable(error)) {
        console.warn(JSON.stringify({ level: "warn", event: "notify-dropped", notice: notice.event, policy: notice.policy, key: notice.key, reason: `${failureReason(error)} (${attempt} ${attempt === 1 ? "try" : "tries"})` }));
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS * attempt));
    }
  }
}
