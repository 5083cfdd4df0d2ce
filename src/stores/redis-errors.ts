import { StoreUnavailableError } from "../limiter.js";

/**
 * Redis answered, but with an error that neither retrying nor failing open may hide:
 * CROSSSLOT, WRONGTYPE, a script error. It means a bug or a misconfiguration, so it is
 * deliberately *not* a StoreUnavailableError: `applyFailMode` rethrows it and no traffic
 * is ever admitted because of it.
 */
export class StoreFaultError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreFaultError";
  }
}

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
 */
export async function withTimeout<T>(pending: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  pending.catch(() => {});
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailableError(`redis ${what} did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([pending, timeout]);
  } catch (error) {
    throw translateRedisError(error, what);
  } finally {
    clearTimeout(timer);
  }
}
