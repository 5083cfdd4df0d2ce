import { type NotifyConfig, redactUrl } from "./config.js";
import type { Notice } from "./notifier.js";

/** How long one POST may take before it counts as failed. */
export const WEBHOOK_TIMEOUT_MS = 5000;

/**
 * POSTs one notice as JSON. Resolves on a 2xx; rejects with why otherwise (the status, or the
 * network's error), so the caller decides on a retry. The body is read and dropped: a response
 * left unread would hold its connection. A redirect is not followed: it would re-POST the
 * notice (and its Authorization) wherever the answer points, loopback included.
 */
export async function postNotice(config: NotifyConfig, notice: Notice, fetchImpl: typeof fetch = fetch): Promise<void> {
  const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "spillway-notify" };
  if (config.authorization) headers.authorization = config.authorization;
  const response = await fetchImpl(config.url, { method: "POST", headers, body: JSON.stringify(notice), redirect: "manual", signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS) });
  await response.arrayBuffer().catch(() => {});
  if (response.status >= 300 && response.status < 400) {
    const location = response.headers.get("location");
    throw new Error(`the webhook answered ${response.status}, a redirect${location ? ` to ${redactUrl(location)}` : ""}; redirects are not followed: set notify.url to the final URL`);
  }
  if (!response.ok) throw new Error(`the webhook answered ${response.status}`);
}

/** Why a notice was lost, for its log line: never a URL's credentials. */
export function failureReason(error: unknown): string {
  return redactUrl(error instanceof Error ? error.message : String(error));
}

/** A retryable failure: the network, a timeout, 408, 429 or 5xx; a 4xx otherwise is the webhook saying no. */
export function retryable(error: unknown): boolean {
  const status = /answered (\d{3})\b/.exec((error as Error).message)?.[1];
  if (status === undefined) return true;
  const code = Number(status);
  return code === 408 || code === 429 || code >= 500;
}
