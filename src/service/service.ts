// service: the decision service every transport calls, its request schemas, its RPC errors.
import type { SpillwayConfig } from "../config/config.js";
import { stackLeaseMs } from "../core/concurrency.js";
import type { AcquireResult, CheckMode, Decision, ExtendResult, Policy, ReleaseResult } from "../core/types.js";
import { type Limiter, applyFailMode, mayFailOpen, newLeaseId } from "../core/limiter.js";
import { type CheckRequest, creditsStoreKey, parseAcquire, parseCheck, parseCredits, parseExtend, parseKeyRequest, parseRelease } from "./requests.js";
import { type Overrides, overridesFor } from "../overrides/overrides.js";
import { OverrideAdmin } from "../overrides/admin.js";
import { apiStoreKey } from "../overrides/key-source.js";
import { type RouteSources, checkSourcedKey, routeSourcesOf, unsourcedWarning } from "../overrides/route-sources.js";

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

/** POST /v1/credits' answer; `warning` when the config shows the balance is likely not the one meant (route-sources.ts). */
export interface CreditsAnswer {
  key: string;
  policy: string;
  remaining: number;
  warning?: string;
}

/**
 * The decision API once, for every transport: the HTTP routes and the service-binding RPC
 * entrypoint both hand their raw arguments here. Validation errors (ValidationError,
 * UnknownPolicyError) and StoreUnavailableError (failMode closed) propagate to the caller.
 */
export class SpillwayService {
  readonly limiter: Limiter;
  readonly config: SpillwayConfig;
  /** Per-key limits: the config's and the store's runtime table (docs/overrides.md). */
  readonly overrides: Overrides;
  /** PUT, GET and DELETE /v1/overrides (and their RPC methods). */
  readonly overrideAdmin: OverrideAdmin;
  /** undefined when no override can ever apply: the decision path skips the lookup. */
  readonly #resolver: Overrides | undefined;
  /** The key sources the config's gateway routes count each policy under (what a `source` may name). */
  readonly #routeSources: RouteSources;

  /** `overrides` default: the config's, and the store's runtime table when it has one (overridesFor). */
  constructor(limiter: Limiter, config: SpillwayConfig, overrides?: Overrides) {
    this.limiter = limiter;
    this.config = config;
    this.overrides = overrides ?? overridesFor(config, limiter);
    this.#routeSources = routeSourcesOf(config.gateway?.routes, config.catalog);
    this.overrideAdmin = new OverrideAdmin(this.overrides, config.catalog, this.#routeSources);
    this.#resolver = this.overrides.none ? undefined : this.overrides;
  }

  /** Promise reactions, not async functions awaiting each other: this runs for every decision. */
  check(body: unknown): Promise<Checked> {
    let request: CheckRequest;
    try {
      request = parseCheck(body, this.config.catalog);
    } catch (error) {
      return Promise.reject(error);
    }
    const { cost } = request;
    // The key's own namespace (apiStoreKey): overrides match the key as given, the store counts this.
    const storeKey = apiStoreKey(request.key);
    const decide = (policies: readonly Policy[]): Promise<Checked> => {
      const stack = policies as Policy[];
      if (request.mode === "debit") {
        // Failing open loses the debit (nothing could record it) and says so: failedOpen.
        return applyFailMode(policies, () => this.limiter.debit(storeKey, policies, cost, request.spentAtMs)).then((decision) => ({ decision, policies: stack, cost, debit: true }));
      }
      const options = request as CheckRequest & { mode: CheckMode };
      return applyFailMode(policies, () => this.limiter.check(storeKey, policies, options)).then((decision) => ({ decision, policies: stack, cost }));
    };
    if (!this.#resolver) return decide(request.policies);
    // Overrides resolve between the request and the store: the algorithms see ordinary policies.
    const resolved = this.#resolver.resolve(request.policies, request.key);
    return resolved instanceof Promise ? resolved.then(decide) : decide(resolved);
  }

  /** A request's policies with the overrides for its key applied. */
  async #resolve(policies: Policy[], key: string): Promise<Policy[]> {
    return this.#resolver ? ((await this.#resolver.resolve(policies, key)) as Policy[]) : policies;
  }

  async peek(body: unknown): Promise<Checked> {
    const request = parseKeyRequest(body, this.config.catalog);
    const policies = await this.#resolve(request.policies, request.key);
    const decision = await applyFailMode(policies, () => this.limiter.peek(apiStoreKey(request.key), policies));
    return { decision, policies, cost: 1 };
  }

  async reset(body: unknown): Promise<void> {
    const request = parseKeyRequest(body, this.config.catalog);
    await this.limiter.reset(apiStoreKey(request.key), request.policies);
  }

  async acquire(body: unknown): Promise<AcquireAnswer> {
    const request = parseAcquire(body, this.config.catalog);
    const policies = await this.#resolve(request.policies, request.key);
    try {
      return await this.limiter.acquire(apiStoreKey(request.key), policies, request);
    } catch (error) {
      if (!mayFailOpen(policies, error)) throw error;
      const policy = policies[0]!;
      return { acquired: true, leaseId: `failed-open-${newLeaseId()}`, leaseMs: request.leaseMs ?? stackLeaseMs(policies), limit: policy.limit, remaining: policy.limit, failedOpen: true };
    }
  }

  async release(body: unknown): Promise<ReleaseResult> {
    const request = parseRelease(body, this.config.catalog);
    return this.limiter.release(apiStoreKey(request.key), await this.#resolve(request.policies, request.key), request.leaseId);
  }

  /**
   * POST /v1/credits: raises (`add`) or sets (`set`) a key's balance of a credits policy, with
   * the key's override of its `limit` applied (a balance never seen starts there). No failMode:
   * a change that cannot reach the store is an error, never a guess.
   */
  async credits(body: unknown): Promise<CreditsAnswer> {
    const request = parseCredits(body, this.config.catalog);
    // A balance no route spends is refused (a source no route of the policy reads), or warned of.
    const name = request.policy.name;
    const warning = request.keySource ? checkSourcedKey(this.#routeSources, name, request.keySource, request.key, "balance") : unsourcedWarning(this.#routeSources, name, request.key, "balance");
    const [policy] = this.#resolver ? await this.#resolver.resolve([request.policy], request.key, undefined, request.source) : [request.policy];
    const { remaining } = await this.limiter.credits(await creditsStoreKey(request), policy!, request.change);
    const answer: CreditsAnswer = { key: request.key, policy: policy!.name, remaining };
    if (warning) answer.warning = warning;
    return answer;
  }

  async extend(body: unknown): Promise<ExtendResult> {
    const request = parseExtend(body, this.config.catalog);
    return this.limiter.extend(apiStoreKey(request.key), await this.#resolve(request.policies, request.key), request.leaseId, request.leaseMs);
  }
}
