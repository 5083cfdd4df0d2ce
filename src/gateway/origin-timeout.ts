import { problem, problemResponse } from "../http/problems.js";
import { ORIGIN_TIMEOUT_TYPE } from "../core/wire.js";
import type { OriginAnswer } from "./origin.js";


/** The origin sent nothing for `timeoutMs`: no answer headers yet, or no byte of its body. */
export class OriginTimeoutError extends Error {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`the origin sent nothing for ${timeoutMs} ms`);
    this.name = "OriginTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

/** The 504 for an origin that did not answer within originTimeoutMs. */
export function gatewayTimeout(origin: URL, timeoutMs: number): Response {
  return problemResponse(
    problem(504, `the origin ${origin.host} sent no answer within ${timeoutMs} ms (originTimeoutMs); the request to it was cancelled`, {
      type: ORIGIN_TIMEOUT_TYPE,
    }),
  );
}

/**
 * Waits on the origin for its answer's headers, for at most `timeoutMs` of the origin's
 * silence. The clock runs while the origin owes the next move: from the start, and while an
 * upload chunk it was handed is not yet taken. It stops while the gateway itself waits on the
 * client for more upload (a slow upload is the client's; the server's requestTimeout bounds
 * it). Past the limit the origin request is aborted (`signal`) and `answer` rejects with an
 * OriginTimeoutError, whether or not the origin client honours the signal.
 *
 * One timer per request, re-armed lazily: moving the deadline costs no timer call.
 */
export class OriginWait {
  /** For the origin request: aborted when the client goes away or the wait times out. */
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  readonly #controller = new AbortController();
  readonly #expired: Promise<never>;
  #reject!: (error: OriginTimeoutError) => void;
  readonly #clock: OriginClock;

  constructor(clientSignal: AbortSignal, timeoutMs: number) {
    this.timeoutMs = timeoutMs;
    this.signal = this.#controller.signal;
    this.#expired = new Promise<never>((_resolve, reject) => {
      this.#reject = reject;
    });
    // Handled here, raced in answer(): a wait whose request never got as far as answer() (refused,
    // failed before its origin call) must not leave an unhandled rejection when its clock runs out.
    this.#expired.catch(() => {});
    if (clientSignal.aborted) this.#controller.abort(clientSignal.reason);
    else clientSignal.addEventListener("abort", () => this.#controller.abort(clientSignal.reason), { once: true });
    this.#clock = new OriginClock(timeoutMs, (error) => {
      // Rejected before the abort, so the race reports the timeout rather than the abort it causes.
      this.#reject(error);
      this.#controller.abort(error);
    });
  }

  /** The origin's answer, or an OriginTimeoutError; an answer that comes too late is discarded. */
  async answer(sent: Promise<OriginAnswer>): Promise<OriginAnswer> {
    try {
      return await Promise.race([sent, this.#expired]);
    } catch (error) {
      if (error instanceof OriginTimeoutError) sent.then((late) => late.body?.cancel().catch(() => {}), () => {});
      throw error;
    } finally {
      this.#clock.stop();
    }
  }

  /** The client's upload as the origin client reads it, moving the clock as described above. */
  upload(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    const reader = body.getReader();
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          // The origin asked for more: now the gateway waits on the client.
          this.#clock.waitOnClient();
          let chunk: ReadableStreamReadResult<Uint8Array>;
          try {
            chunk = await reader.read();
          } catch (error) {
            controller.error(error);
            return;
          }
          this.#clock.owe();
          if (chunk.done) controller.close();
          else controller.enqueue(chunk.value);
        },
        cancel: (reason) => reader.cancel(reason),
      },
      { highWaterMark: 0 },
    );
  }
}

/**
 * The clock of an origin's wait (see OriginWait), for edges that move bytes themselves: runs
 * from construction while the origin owes the next move (`owe`), pauses while the gateway
 * waits on the client (`waitOnClient`), calls `expire` once past `timeoutMs`, never after `stop`.
 * One timer, re-armed lazily: moving the deadline costs no timer call.
 */
export class OriginClock {
  readonly timeoutMs: number;
  readonly #expire: (error: OriginTimeoutError) => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the origin last got the move; undefined while the gateway waits on the client. */
  #owedSinceMs: number | undefined;
  #settled = false;

  constructor(timeoutMs: number, expire: (error: OriginTimeoutError) => void) {
    this.timeoutMs = timeoutMs;
    this.#expire = expire;
    this.owe();
  }

  owe(): void {
    if (this.#settled) return;
    this.#owedSinceMs = Date.now();
    this.#timer ??= setTimeout(this.#check, this.timeoutMs);
  }

  waitOnClient(): void {
    this.#owedSinceMs = undefined;
  }

  stop(): void {
    this.#settled = true;
    clearTimeout(this.#timer);
  }

  readonly #check = (): void => {
    this.#timer = undefined;
    if (this.#settled || this.#owedSinceMs === undefined) return;
    const leftMs = this.#owedSinceMs + this.timeoutMs - Date.now();
    if (leftMs > 0) {
      this.#timer = setTimeout(this.#check, leftMs);
      return;
    }
    this.#settled = true;
    this.#expire(new OriginTimeoutError(this.timeoutMs));
  };
}

/**
 * An origin's body that errors with an OriginTimeoutError when no byte of it moves for
 * `timeoutMs` (the origin stalls, or the client stops reading), like a socket's idle timeout:
 * what the node:http origin client gets from its socket, given to global fetch's bodies.
 */
export function cutWhenIdle(body: ReadableStream<Uint8Array>, timeoutMs: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let movedAtMs = Date.now();
  let finished = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const finish = () => {
    finished = true;
    clearTimeout(timer);
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const check = () => {
          if (finished) return;
          const leftMs = movedAtMs + timeoutMs - Date.now();
          if (leftMs > 0) {
            timer = setTimeout(check, leftMs);
            return;
          }
          finish();
          const error = new OriginTimeoutError(timeoutMs);
          controller.error(error);
          void reader.cancel(error).catch(() => {});
        };
        timer = setTimeout(check, timeoutMs);
      },
      async pull(controller) {
        try {
          const chunk = await reader.read();
          if (finished) return;
          movedAtMs = Date.now();
          if (chunk.done) {
            finish();
            controller.close();
          } else {
            controller.enqueue(chunk.value);
          }
        } catch (error) {
          if (finished) return;
          finish();
          controller.error(error);
        }
      },
      cancel(reason) {
        finish();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
