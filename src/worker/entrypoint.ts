import { WorkerEntrypoint } from "cloudflare:workers";
import type { Decision, ExtendResult, ReleaseResult } from "../core/types.js";
import { rpcAnswer } from "../rpc-errors.js";
import type { AcquireAnswer } from "../service.js";
import type { Env } from "./env.js";
import { appFor } from "./index.js";
import { serviceFor } from "./service.js";

/**
 * Service-binding RPC: other Workers call `env.SPILLWAY.check({ key, policy })` with the
 * same shapes as the HTTP API. No token: holding the binding is the capability.
 *
 * Errors (workerd passes an RPC error's message, not its class, so the message is the contract):
 * - bad input: the message starts with the field path and a colon, `policy.limit: must be …`,
 *   `policy: no policy named "x" …` (a path has no spaces);
 * - `store unavailable: …` (STORE_UNAVAILABLE_PREFIX): the store could not be reached and a
 *   policy fails closed; no decision was made, try later;
 * - `store fault: …` (STORE_FAULT_PREFIX): the store answered with an error (a bug or a
 *   misconfiguration); nothing was admitted, whatever the failMode.
 * `bindingLimiter` (spillway/client) turns these into LimiterRequestError, LimiterUnavailableError and StoreFaultError.
 *
 * @example const decision = await env.SPILLWAY.check({ key: "user:42", policy: "per-minute" });
 */
export class SpillwayRpc extends WorkerEntrypoint<Env> {
  override async fetch(request: Request): Promise<Response> {
    // `fetch` over the binding reaches the same HTTP app (and so needs the token).
    return appFor(this.env).fetch(request, this.env, this.ctx);
  }

  check(request: unknown): Promise<Decision> {
    return rpcAnswer(async () => (await serviceFor(this.env).check(request)).decision);
  }

  peek(request: unknown): Promise<Decision> {
    return rpcAnswer(async () => (await serviceFor(this.env).peek(request)).decision);
  }

  reset(request: unknown): Promise<void> {
    return rpcAnswer(() => serviceFor(this.env).reset(request));
  }

  acquire(request: unknown): Promise<AcquireAnswer> {
    return rpcAnswer(() => serviceFor(this.env).acquire(request));
  }

  release(request: unknown): Promise<ReleaseResult> {
    return rpcAnswer(() => serviceFor(this.env).release(request));
  }

  extend(request: unknown): Promise<ExtendResult> {
    return rpcAnswer(() => serviceFor(this.env).extend(request));
  }
}
