import { StoreFaultError, StoreUnavailableError } from "./limiter.js";

// No Workers-only or Node-only imports: the entrypoint (workerd) and bindingLimiter (any runtime) share this.

/** Message prefix of an RPC error when the store could not be reached and the policy fails closed: no decision was made. */
export const STORE_UNAVAILABLE_PREFIX = "store unavailable: ";
/** Message prefix of an RPC error when the store answered with an error (a bug or misconfiguration): nothing was admitted. */
export const STORE_FAULT_PREFIX = "store fault: ";

/**
 * Problem `type`s of the two 503s over HTTP. Both are 503, but a client must tell them
 * apart: an unreachable store may be failed open by a policy, a store fault never may.
 */
export const STORE_UNAVAILABLE_TYPE = "urn:spillway:problem:store-unavailable";
export const STORE_FAULT_TYPE = "urn:spillway:problem:store-fault";

/**
 * An error as it may cross a service binding. workerd keeps an RPC error's message but not
 * its class, so store failures are re-thrown as plain Errors whose message starts with a
 * stable prefix the caller can test; anything else (bad input) passes unchanged.
 * No `cause`: it would have to be serialised across the binding, and the message already says it.
 */
export function toRpcError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return new Error(`${STORE_UNAVAILABLE_PREFIX}${error.message}`);
  if (error instanceof StoreFaultError) return new Error(`${STORE_FAULT_PREFIX}${error.message}`);
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
