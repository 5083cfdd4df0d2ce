import type { BodyTap } from "./answer-count.js";

/**
 * A costed answer is always charged (docs/counting.md): on a counted route the client's
 * leaving does not end the exchange with the origin. These are the Request/Response edge's
 * parts of that (the Worker's, and the Hono edge on Node); node/http/gateway-edge.ts does the same
 * on node:http. Both are bounded by the route's maxReadMs and maxReadBytes (ReadLimits).
 */

/**
 * The signal a counted request's origin fetch gets: the client's abort reaches it only
 * `limitMs` later, and not at all once the answer's head has come (then the body's read is
 * bounded by the tap, tappedBody). `expired` says the origin was given up on for this.
 */
export class ClientLeaving {
  readonly signal: AbortSignal;
  #expired = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #headCame = false;

  constructor(client: AbortSignal, limitMs: number) {
    const controller = new AbortController();
    this.signal = controller.signal;
    const leave = () => {
      if (this.#headCame) return;
      this.#timer = setTimeout(() => {
        this.#expired = true;
        controller.abort(client.reason);
      }, limitMs);
    };
    if (client.aborted) leave();
    else client.addEventListener("abort", leave, { once: true });
  }

  get expired(): boolean {
    return this.#expired;
  }

  headCame(): void {
    this.#headCame = true;
    clearTimeout(this.#timer);
  }
}

/**
 * The body a counted answer's client reads, with its tap beside it: each chunk is pushed to
 * the tap as it passes; the tap ends (and debits) when the body ends or breaks off. When the
 * client goes away (cancels), the origin's body is read on for the tap alone, until the tap
 * is done (usage found, maxReadBytes read) or `readOnMs` (the route's maxReadMs, or less where
 * the platform allows less) has passed, then cancelled.
 * `ended` resolves once the tap has ended: the caller hands it to waitUntil, which keeps the
 * read alive on Workers.
 */
export function tappedBody(body: ReadableStream<Uint8Array>, tap: BodyTap, readOnMs = tap.limits.ms): { body: ReadableStream<Uint8Array>; ended: Promise<void> } {
  const reader = body.getReader();
  let resolveEnded!: () => void;
  const ended = new Promise<void>((resolve) => (resolveEnded = resolve));
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    tap.end();
    resolveEnded();
  };
  const readOn = async (reason: unknown) => {
    tap.clientGone();
    const timer = setTimeout(() => {
      tap.cut(`maxReadMs (${readOnMs})`);
      // A pending read resolves as done once the reader is cancelled.
      void reader.cancel(reason).catch(() => {});
    }, readOnMs);
    try {
      while (!tap.done) {
        const chunk = await reader.read();
        if (chunk.done) break;
        tap.push(chunk.value);
      }
      if (tap.done) await reader.cancel(reason).catch(() => {});
    } catch {
      // The origin broke off: what was read counts.
    } finally {
      clearTimeout(timer);
      finish();
    }
  };
  const tapped = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const chunk = await reader.read();
          if (chunk.done) {
            controller.close();
            finish();
          } else {
            tap.push(chunk.value);
            controller.enqueue(chunk.value);
          }
        } catch (error) {
          controller.error(error);
          finish();
        }
      },
      cancel(reason) {
        // Not awaited: the client's cancel returns at once; `ended` carries the read on.
        if (!finished) void readOn(reason);
      },
    },
    { highWaterMark: 0 },
  );
  return { body: tapped, ended };
}
