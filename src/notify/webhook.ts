import type { NotifyConfig } from "./config.js";
import type { Notice } from "./notifier.js";

/** How long one POST may take before it counts as failed. */
export const WEBHOOK_TIMEOUT_MS = 5000;

/**
 * POSTs one notice as JSON. Resolves on a 2xx; rejects with why otherwise (the status, or the
 * network's error), so the caller decides on a retry. The body is read and dropped: a response
 * left unread would hold its connection.
 */
export async function postNotice(config: NotifyConfig, notice: Notice, fetchImpl: typeof fetch = fetch): Promise<void> {
  const response = await fetchImpl(config.url, {
    method: "POST",
    headers: { "content-type": "application/json", "user-agent": "spillway-notify" },
    body: JSON.stringify(notice),
    signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
  });
  await response.arrayBuffer().catch(() => {});
  if (!response.ok) throw new Error(`the webhook answered ${response.status}`);
}

/** A retryable failure: the network, a timeout, 408, 429 or 5xx; a 4xx otherwise is the webhook saying no. */
export function retryable(error: unknown): boolean {
  const status = /answered (\d{3})$/.exec((error as Error).message)?.[1];
  if (status === undefined) return true;
  const code = Number(status);
  return code === 408 || code === 429 || code >= 500;
}
