import { OverloadedError, StoreFaultError, StoreUnavailableError } from "../core/limiter.js";
import { OVERLOADED_PREFIX, STORE_FAULT_PREFIX, STORE_UNAVAILABLE_PREFIX } from "../core/wire.js";

// No Workers-only or Node-only imports: the entrypoint (workerd) and bindingLimiter (any runtime) share this.

/**
 * An error as it may cross a service binding. workerd keeps an RPC error's message but not
 * its class, so store failures are re-thrown as plain Errors whose message starts with a
 * stable prefix the caller can test; anything else (bad input) passes unchanged.
 * No `cause`: it would have to be serialised across the binding, and the message already says it.
 */
export function toRpcError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return new Error(`${STORE_UNAVAILABLE_PREFIX}${error.message}`);
  if (error instanceof StoreFaultError) return new Error(`${STORE_FAULT_PREFIX}${error.message}`);
  if (error instanceof OverloadedError) return new Error(`${OVERLOADED_PREFIX}${error.message}`);
  return error;
}

/** Runs one RPC method, translating store failures with toRpcError. */
export async function rpcAnswer<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toRpcError(error);
  }
}
