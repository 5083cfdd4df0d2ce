import { WorkerEntrypoint } from "cloudflare:workers";
import type { Decision, ExtendResult, ReleaseResult } from "../core/types.js";
import { rpcAnswer } from "../service/rpc-errors.js";
import type { AcquireAnswer, SpillwayService } from "../service/service.js";
import type { OverrideView } from "../overrides/admin.js";
import { ValidationError } from "../core/validation.js";
import type { Env } from "./env.js";

/**
 * Service-binding RPC: other Workers call `env.SPILLWAY.check({ key, policy })` with the
 * same shapes as the HTTP API (`mode: "debit"` included: the state after the debit, never a
 * refusal). No token: holding the binding is the capability.
 * `createWorker(config).Rpc` is the concrete class, bound to that config; this one is its
 * shape, for a caller's `Service<SpillwayEntrypoint>`.
 *
 * Errors (workerd passes an RPC error's message, not its class, so the message is the contract):
 * - bad input: the message starts with the field path and a colon, `policy.limit: must be …`,
 *   `policy: no policy named "x" …` (a path has no spaces);
 * - `store unavailable: …` (STORE_UNAVAILABLE_PREFIX): the store could not be reached and a
 *   policy fails closed; no decision was made, try later;
 * - `store fault: …` (STORE_FAULT_PREFIX): the store answered with an error (a bug or a
 *   misconfiguration); nothing was admitted, whatever the failMode.
 * - `overloaded: …` (OVERLOADED_PREFIX): a Durable Object was overloaded and the call was
 *   shed; nothing was decided or admitted, whatever the failMode; retry later.
 * `bindingLimiter` (spillway/client) turns these into LimiterRequestError, LimiterUnavailableError, StoreFaultError and OverloadedError.
 *
 * @example const decision = await env.SPILLWAY.check({ key: "user:42", policy: "per-minute" });
 */
export abstract class SpillwayEntrypoint extends WorkerEntrypoint<Env> {
  /** The service (store and config) for this Worker's bindings. */
  protected abstract service(): SpillwayService;

  check(request: unknown): Promise<Decision> {
    return rpcAnswer(async () => (await this.service().check(request)).decision);
  }

  peek(request: unknown): Promise<Decision> {
    return rpcAnswer(async () => (await this.service().peek(request)).decision);
  }

  reset(request: unknown): Promise<void> {
    return rpcAnswer(() => this.service().reset(request));
  }

  acquire(request: unknown): Promise<AcquireAnswer> {
    return rpcAnswer(() => this.service().acquire(request));
  }

  release(request: unknown): Promise<ReleaseResult> {
    return rpcAnswer(() => this.service().release(request));
  }

  extend(request: unknown): Promise<ExtendResult> {
    return rpcAnswer(() => this.service().extend(request));
  }

  /** `POST /v1/credits`: `{ key, policy, add | set }`; answers `{ key, policy, remaining }`. */
  credits(request: unknown): Promise<{ key: string; policy: string; remaining: number }> {
    return rpcAnswer(() => this.service().credits(request));
  }

  /** `PUT /v1/overrides`: `{ policy, key, source?, limit?, burst?, period?, expiresAt? }`; answers the override as stored. */
  putOverride(request: unknown): Promise<OverrideView> {
    return rpcAnswer(() => this.service().overrideAdmin.put(request));
  }

  /** `DELETE /v1/overrides`: `{ policy, key, source? }`. */
  deleteOverride(request: unknown): Promise<{ deleted: boolean }> {
    return rpcAnswer(() => this.service().overrideAdmin.delete(request));
  }

  /** `GET /v1/overrides`: `{ policy, cursor? }`; 1,000 a page, then a `cursor` for the next. */
  listOverrides(request: unknown): Promise<{ overrides: OverrideView[]; cursor?: string }> {
    return rpcAnswer(async () => {
      if (request === null || typeof request !== "object" || Array.isArray(request)) throw new ValidationError("request", "must be an object like { policy: \"per-key\" }");
      return this.service().overrideAdmin.list(request as Record<string, string | undefined>);
    });
  }
}

/** The RPC surface a caller's service binding sees: `Service<SpillwayRpc>`. */
export type SpillwayRpc = SpillwayEntrypoint;
