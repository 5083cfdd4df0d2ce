import { WorkerEntrypoint } from "cloudflare:workers";
import type { Decision, ExtendResult, ReleaseResult } from "../core/types.js";
import type { AcquireAnswer } from "../service.js";
import type { Env } from "./env.js";
import { appFor } from "./index.js";
import { serviceFor } from "./service.js";

/**
 * Service-binding RPC: other Workers call `env.SPILLWAY.check({ key, policy })` with the
 * same shapes as the HTTP API. No token: holding the binding is the capability.
 * Bad arguments throw an Error whose message names the field.
 *
 * @example const decision = await env.SPILLWAY.check({ key: "user:42", policy: "per-minute" });
 */
export class SpillwayRpc extends WorkerEntrypoint<Env> {
  override async fetch(request: Request): Promise<Response> {
    // `fetch` over the binding reaches the same HTTP app (and so needs the token).
    return appFor(this.env).fetch(request, this.env, this.ctx);
  }

  async check(request: unknown): Promise<Decision> {
    return (await serviceFor(this.env).check(request)).decision;
  }

  async peek(request: unknown): Promise<Decision> {
    return (await serviceFor(this.env).peek(request)).decision;
  }

  async reset(request: unknown): Promise<void> {
    await serviceFor(this.env).reset(request);
  }

  acquire(request: unknown): Promise<AcquireAnswer> {
    return serviceFor(this.env).acquire(request);
  }

  release(request: unknown): Promise<ReleaseResult> {
    return serviceFor(this.env).release(request);
  }

  extend(request: unknown): Promise<ExtendResult> {
    return serviceFor(this.env).extend(request);
  }
}
