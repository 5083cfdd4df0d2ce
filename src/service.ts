import type { SpillwayConfig } from "./config.js";
import { stackLeaseMs } from "./core/concurrency.js";
import type { AcquireResult, CheckMode, Decision, ExtendResult, Policy, ReleaseResult } from "./core/types.js";
import { type Limiter, applyFailMode, mayFailOpen, newLeaseId } from "./limiter.js";
import { type CheckRequest, parseAcquire, parseCheck, parseExtend, parseKeyRequest, parseRelease } from "./requests.js";

/** A decision with the policies it was made against (the headers need their periods). */
export interface Checked {
  decision: Decision;
  policies: Policy[];
  /** What the request asked for (1 for a peek), named when it can never be admitted. */
  cost: number;
  /** A debit (`mode: "debit"`): answered 200 whatever the state after it. */
  debit?: boolean;
}

export type AcquireAnswer = AcquireResult & { failedOpen?: boolean };

/**
 * The decision API once, for every transport: the HTTP routes and the service-binding RPC
 * entrypoint both hand their raw arguments here. Validation errors (ValidationError,
 * UnknownPolicyError) and StoreUnavailableError (failMode closed) propagate to the caller.
 */
export class SpillwayService {
  readonly limiter: Limiter;
  readonly config: SpillwayConfig;

  constructor(limiter: Limiter, config: SpillwayConfig) {
    this.limiter = limiter;
    this.config = config;
  }

  /** Promise reactions, not async functions awaiting each other: this runs for every decision. */
  check(body: unknown): Promise<Checked> {
    let request: CheckRequest;
    try {
      request = parseCheck(body, this.config.catalog);
    } catch (error) {
      return Promise.reject(error);
    }
    const { policies, cost } = request;
    if (request.mode === "debit") {
      // Failing open loses the debit (nothing could record it) and says so: failedOpen.
      return applyFailMode(policies, () => this.limiter.debit(request.key, policies, cost)).then((decision) => ({ decision, policies, cost, debit: true }));
    }
    const options = request as CheckRequest & { mode: CheckMode };
    return applyFailMode(policies, () => this.limiter.check(request.key, policies, options)).then((decision) => ({ decision, policies, cost }));
  }

  async peek(body: unknown): Promise<Checked> {
    const request = parseKeyRequest(body, this.config.catalog);
    const decision = await applyFailMode(request.policies, () => this.limiter.peek(request.key, request.policies));
    return { decision, policies: request.policies, cost: 1 };
  }

  async reset(body: unknown): Promise<void> {
    const request = parseKeyRequest(body, this.config.catalog);
    await this.limiter.reset(request.key, request.policies);
  }

  async acquire(body: unknown): Promise<AcquireAnswer> {
    const request = parseAcquire(body, this.config.catalog);
    try {
      return await this.limiter.acquire(request.key, request.policies, request);
    } catch (error) {
      if (!mayFailOpen(request.policies, error)) throw error;
      const policy = request.policies[0]!;
      return { acquired: true, leaseId: `failed-open-${newLeaseId()}`, leaseMs: request.leaseMs ?? stackLeaseMs(request.policies), limit: policy.limit, remaining: policy.limit, failedOpen: true };
    }
  }

  release(body: unknown): Promise<ReleaseResult> {
    const request = parseRelease(body, this.config.catalog);
    return this.limiter.release(request.key, request.policies, request.leaseId);
  }

  extend(body: unknown): Promise<ExtendResult> {
    const request = parseExtend(body, this.config.catalog);
    return this.limiter.extend(request.key, request.policies, request.leaseId, request.leaseMs);
  }
}
