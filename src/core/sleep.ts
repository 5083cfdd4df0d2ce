/** setTimeout cannot wait longer than 2^31 - 1 ms; longer waits would fire at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * Waits `ms` (setTimeout, so fake clocks drive it): true when the time ran out, false as soon
 * as `signal` aborts (the timer is cleared, so nothing fires later). Waits of 0 or less end at once.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, Math.min(ms, MAX_TIMER_MS));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
