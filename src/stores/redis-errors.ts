import { StoreFaultError, StoreUnavailableError } from "../limiter.js";

export { StoreFaultError };

/** Reply errors that mean "this node can't serve right now": failMode applies. */
const TRANSIENT_REPLIES = /^(CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|READONLY|BUSY|MOVED|ASK|NOREPLICAS)\b/;

function isReplyError(error: Error): boolean {
  // ioredis ReplyError (from redis-errors): the server's own answer.
  return error.name === "ReplyError";
}

/**
 * Maps what an ioredis call threw to the store's contract: connection trouble and
 * transient cluster states become StoreUnavailableError; any other server reply error
 * becomes StoreFaultError.
 */
export function translateRedisError(error: unknown, what: string): Error {
  if (error instanceof StoreUnavailableError || error instanceof StoreFaultError) return error;
  if (!(error instanceof Error)) return new StoreUnavailableError(`redis ${what} failed: ${String(error)}`, { cause: error });
  if (isReplyError(error) && !TRANSIENT_REPLIES.test(error.message)) {
    return new StoreFaultError(`redis ${what} failed: ${error.message}`, { cause: error });
  }
  return new StoreUnavailableError(`redis ${what} failed: ${error.message}`, { cause: error });
}

/**
 * Settles `pending` within `timeoutMs`, or throws StoreUnavailableError. The late answer
 * is swallowed so that it never becomes an unhandled rejection.
 *
 * The rejection waits one more turn (setImmediate runs after the poll phase): when this
 * process itself stalled (GC, CPU), timers fire before sockets are read, and an answer
 * that Redis sent in time would otherwise be thrown away.
 */
export async function withTimeout<T>(pending: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  pending.catch(() => {});
  const timeout = new Promise<never>((_, reject) => {
    const fail = () => reject(new StoreUnavailableError(`redis ${what} did not answer within ${timeoutMs} ms`));
    timer = setTimeout(() => setImmediate(fail), timeoutMs);
  });
  try {
    return await Promise.race([pending, timeout]);
  } catch (error) {
    throw translateRedisError(error, what);
  } finally {
    clearTimeout(timer);
  }
}
