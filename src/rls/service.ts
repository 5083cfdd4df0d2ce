import type { CheckOptions, Decision, Policy } from "../core/types.js";
import { DEFAULT_CHECK_OPTIONS } from "../core/check-options.js";
import { type Limiter, failOpenOrRethrow } from "../core/limiter.js";
import { type Digest, type Planned, Planner } from "./plan.js";
import { StackCache } from "./stacks.js";
import { type RlsRequest, type WireRequest, parseRlsRequest } from "./request.js";
import { NEAR_LIMIT_RATIO, type RlsStats } from "./stats.js";
import type { RlsConfig, RlsDomain } from "./types.js";
import { dynamicMetadataOf } from "./metadata.js";
import { afterQuotaRefusal, hasQuota, overallOverLimit } from "./quota.js";
import { type ReferenceHeaderNames, referenceHeadersOf } from "./reference-headers.js";
import { headersOf } from "./spillway-headers.js";
import { type DescriptorResult, type RlsAnswer, type RlsStatus, statusOf } from "./status.js";

export type { RlsAnswer, RlsStatus } from "./status.js";

export interface RlsServiceOptions {
  limiter: Limiter;
  /** The config in force, read once at the start of every request (a reload swaps what it answers). */
  config: () => RlsConfig;
  digest: Digest;
  stats?: RlsStats;
  /** Add Spillway's RateLimit-Policy / RateLimit / Retry-After fields to response_headers_to_add. */
  responseHeaders?: boolean;
  /** The reference's global QUOTA_MODE: every descriptor is a quota descriptor (quota.ts). */
  quotaMode?: boolean;
  /** The reference's global SHADOW_MODE: decided and counted as usual, answered OK (statuses as decided). */
  shadowMode?: boolean;
  /** The reference's RESPONSE_DYNAMIC_METADATA: dynamic_metadata on every answer (metadata.ts). */
  dynamicMetadata?: boolean;
  /** The reference's LIMIT_RESPONSE_HEADERS_ENABLED headers (reference-headers.ts), in place of Spillway's. */
  referenceHeaders?: ReferenceHeaderNames;
  /** The near_limit stat's threshold (default 0.8, the reference's NEAR_LIMIT_RATIO). */
  nearLimitRatio?: number;
  clockMs?: () => number;
}

/** The user key of a domain's counters when its descriptors are decided together: one key, one store call, one Cluster slot. */
export function domainKey(domain: string): string {
  return `rls/${domain}`;
}

/**
 * ShouldRateLimit, transport-free: the gRPC edge (src/node/grpc/server.ts) decodes, calls
 * `shouldRateLimit`, and encodes. Bad requests throw ValidationError; an unreachable store
 * throws StoreUnavailableError unless every limit involved is `failMode: "open"`.
 *
 * All-or-nothing: the limits of every descriptor of a request are one stack on the domain's
 * key (each counter a policy name of its own, `r.<hash of its entries>`), checked in one
 * store call: a denied request consumes nothing from any counter. Descriptors whose
 * hits_addend differ cannot share one stack (a stack has one cost): they are decided a cost
 * at a time, and once one group is denied the later ones are only peeked. `"atomic": false`
 * gives each descriptor its own key and call (the reference's independent counting, spread
 * over Cluster slots). shadow_mode descriptors are checked in calls of their own, so a
 * would-be denial never changes what the enforced ones decide. quota_mode descriptors
 * (quota.ts) are in the stack like the others; a refusal the answer overrules is decided once
 * more without the quota descriptors that are over, so an admitted request is counted.
 */
export class RlsService {
  private readonly options: RlsServiceOptions;
  private readonly planner: Planner;
  private readonly clockMs: () => number;
  private readonly quotaMode: boolean;
  private readonly stacks = new StackCache();
  private readonly domainKeys = new WeakMap<RlsDomain, string>();

  constructor(options: RlsServiceOptions) {
    this.options = options;
    this.planner = new Planner(options.digest);
    this.clockMs = options.clockMs ?? Date.now;
    this.quotaMode = options.quotaMode ?? false;
  }

  shouldRateLimit(wire: WireRequest): Promise<RlsAnswer> {
    let request: RlsRequest;
    let plan: { domain?: RlsDomain; planned: Planned[] };
    try {
      request = parseRlsRequest(wire);
      plan = this.planner.plan(this.options.config(), request);
    } catch (error) {
      return Promise.reject(error);
    }
    const { domain, planned } = plan;
    const results: DescriptorResult[] = new Array(planned.length);
    if (!domain) {
      try {
        return Promise.resolve(this.answerOf(wire, domain, planned, results));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const single = this.singleCall(domain, planned);
    if (single === undefined) return this.decideAll(wire, domain, planned, results);
    // The usual request: one stacked call, its answer built in the call's own callback (no
    // async frames around it: a turn and a promise less per decision).
    const policies = this.stacks.of(planned, single.indices);
    const answer = (decision: Decision) => {
      const result = { decision };
      for (let i = 0; i < single.indices.length; i++) results[single.indices[i]!] = result;
      return this.answerOf(wire, domain, planned, results);
    };
    return this.startCheck(this.keyOf(domain), policies, single.cost).then(answer, (error: unknown) => answer(failOpenOrRethrow(policies, error)));
  }

  /**
   * The enforced descriptors and their cost when the request is decided by one stacked call
   * and nothing more: an atomic domain, no shadow or quota descriptor, no block, one cost.
   * Anything else (undefined) takes decideAll.
   */
  private singleCall(domain: RlsDomain, planned: readonly Planned[]): { indices: number[]; cost: number } | undefined {
    if (!domain.atomic || this.quotaMode) return undefined;
    let cost: number | undefined;
    for (let i = 0; i < planned.length; i++) {
      const plan = planned[i]!;
      if (plan.kind === "block" || (plan.kind === "limit" && (plan.shadow || plan.quota || (cost !== undefined && plan.cost !== cost)))) return undefined;
      if (plan.kind === "limit") cost = plan.cost;
    }
    return cost === undefined ? undefined : { indices: enforcedIndices(planned), cost };
  }

  /** Every other request: shadow descriptors, quota mode, several costs, `"atomic": false`. */
  private async decideAll(wire: WireRequest, domain: RlsDomain, planned: Planned[], results: DescriptorResult[]): Promise<RlsAnswer> {
    const shadows = this.checkShadows(domain, planned, results);
    if (domain.atomic) await this.checkTogether(domain, planned, results);
    else await this.checkEach(domain, planned, results);
    await shadows;
    return this.answerOf(wire, domain, planned, results);
  }

  /** The answer from the decisions made (`results`): statuses, the overall code, headers and metadata, and the stats. */
  private answerOf(wire: WireRequest, domain: RlsDomain | undefined, planned: readonly Planned[], results: readonly DescriptorResult[]): RlsAnswer {
    const nowMs = this.clockMs();
    const statuses: RlsStatus[] = new Array(planned.length);
    const stats = domain && this.options.stats;
    for (let i = 0; i < planned.length; i++) {
      const outcome = statusOf(planned[i]!, results[i], nowMs);
      statuses[i] = outcome.status;
      if (stats) this.record(stats, domain, planned[i]!, outcome);
    }
    // Global shadow mode: the decision as enforced (a refusal consumed nothing), answered OK.
    const overLimit = overallOverLimit(planned, statuses, this.quotaMode) && !this.options.shadowMode;
    const answer: RlsAnswer = { overall_code: overLimit ? "OVER_LIMIT" : "OK", statuses };
    const headers = this.options.referenceHeaders
      ? referenceHeadersOf(this.options.referenceHeaders, planned, statuses, this.quotaMode, nowMs)
      : this.options.responseHeaders
        ? headersOf(planned, results, !overLimit)
        : undefined;
    if (headers) answer.response_headers_to_add = headers;
    if (this.options.dynamicMetadata) answer.dynamic_metadata = dynamicMetadataOf(wire, planned, statuses);
    return answer;
  }

  /**
   * The enforced limits, one stacked call per cost (nearly always one), all-or-nothing. With
   * quota descriptors (quota.ts), a refusal that the answer overrules (no plain descriptor over,
   * some quota descriptor with room) is decided again without the quota descriptors that are
   * over, so an admitted request is counted on every other limit it touches.
   */
  private async checkTogether(domain: RlsDomain, planned: readonly Planned[], results: DescriptorResult[]): Promise<void> {
    // A plain requests_per_unit: 0 rule refuses the request: the others are only peeked, for their statuses.
    let blocked = false;
    let cost: number | undefined;
    let oneCost = true;
    for (const plan of planned) {
      if (plan.kind === "block" && !plan.shadow && !(this.quotaMode || plan.quota)) blocked = true;
      if (plan.kind !== "limit" || plan.shadow) continue;
      if (cost === undefined) cost = plan.cost;
      else if (plan.cost !== cost) oneCost = false;
    }
    if (cost === undefined) return;
    const key = this.keyOf(domain);
    let pending = enforcedIndices(planned);
    for (;;) {
      let refused = false;
      let consumed: ReadonlySet<number> = NONE;
      if (oneCost) {
        // The usual request: every enforced descriptor at one cost, one stacked call (all of it consumed, or none).
        const decision = await this.check(key, this.stacks.of(planned, pending), blocked ? 0 : cost);
        const result = { decision };
        for (let i = 0; i < pending.length; i++) results[pending[i]!] = result;
        refused = !decision.allowed;
      } else {
        let denied = blocked;
        const taken = new Set<number>();
        for (const group of groupsByCost(planned, pending)) {
          const decision = await this.check(key, this.stacks.of(planned, group.indices), denied ? 0 : group.cost);
          const result = { decision };
          for (const index of group.indices) results[index] = result;
          if (!decision.allowed) denied = refused = true;
          else if (!denied && group.cost > 0) for (const index of group.indices) taken.add(index);
        }
        consumed = taken;
      }
      if (!refused || blocked || !hasQuota(planned, this.quotaMode)) return;
      const next = afterQuotaRefusal(planned, results, pending, consumed, this.quotaMode, this.clockMs());
      if (!next) return;
      pending = next;
    }
  }

  /** A domain's store key, built once per domain object (a config load makes new ones). */
  private keyOf(domain: RlsDomain): string {
    let key = this.domainKeys.get(domain);
    if (key === undefined) this.domainKeys.set(domain, (key = domainKey(domain.name)));
    return key;
  }

  /** `"atomic": false`: each descriptor on its own key, in parallel calls. */
  private async checkEach(domain: RlsDomain, planned: readonly Planned[], results: DescriptorResult[]): Promise<void> {
    await Promise.all(
      planned.map(async (plan, index) => {
        if (plan.kind !== "limit" || plan.shadow) return;
        const decision = await this.check(`${this.keyOf(domain)}/${plan.counterId}`, this.stacks.of(planned, [index]), plan.cost);
        results[index] = { decision };
      }),
    );
  }

  /** shadow_mode descriptors, each on its own: counted as usual, never deciding, and never failing the request. */
  private checkShadows(domain: RlsDomain, planned: readonly Planned[], results: DescriptorResult[]): Promise<unknown> | undefined {
    let anyShadow = false;
    for (let i = 0; i < planned.length && !anyShadow; i++) anyShadow = planned[i]!.kind === "limit" && (planned[i] as LimitPlan).shadow;
    if (!anyShadow) return undefined;
    return Promise.all(
      planned.map(async (plan, index) => {
        if (plan.kind !== "limit" || !plan.shadow) return;
        const key = domain.atomic ? this.keyOf(domain) : `${this.keyOf(domain)}/${plan.counterId}`;
        try {
          const decision = await this.check(key, this.stacks.of(planned, [index]), plan.cost);
          results[index] = { decision };
        } catch {
          // A shadow rule answers OK whatever happens; an unreachable store shows in its own metrics.
        }
      }),
    );
  }

  private check(key: string, policies: readonly Policy[], cost: number): Promise<Decision> {
    // applyFailMode's rule without its closure: this runs for every decision.
    return this.startCheck(key, policies, cost).catch((error: unknown) => failOpenOrRethrow(policies, error));
  }

  /** The store's check at `cost`, a synchronous throw as a rejection (failMode is the caller's). */
  private startCheck(key: string, policies: readonly Policy[], cost: number): Promise<Decision> {
    try {
      return this.options.limiter.check(key, policies, checkOptions(cost));
    } catch (error) {
      return Promise.reject(error);
    }
  }


  private record(stats: RlsStats, domain: RlsDomain, plan: Planned, { status, overLimit }: { status: RlsStatus; overLimit: boolean }): void {
    if (plan.kind !== "limit" && plan.kind !== "block") return;
    const limit = status.current_limit?.requests_per_unit ?? 0;
    const used = limit - status.limit_remaining;
    stats.record({
      domain: domain.name,
      metricKey: plan.metricKey,
      statKey: plan.statKey,
      cost: plan.cost,
      overLimit,
      nearLimit: limit > 0 && used > Math.floor(limit * (this.options.nearLimitRatio ?? NEAR_LIMIT_RATIO)),
      shadow: plan.shadow,
    });
  }
}

type LimitPlan = Extract<Planned, { kind: "limit" }>;

/** A check at `cost`: the usual options object shared (this runs for every decision). */
function checkOptions(cost: number): CheckOptions {
  return cost === 1 ? DEFAULT_CHECK_OPTIONS : { cost, mode: "reject", maxWaitMs: 0 };
}

/** No descriptor consumed: a single stacked call that was refused. */
const NONE: ReadonlySet<number> = new Set();

/** The indices of the enforced (limited, not shadow) descriptors, in request order. */
function enforcedIndices(planned: readonly Planned[]): number[] {
  const indices: number[] = [];
  for (let i = 0; i < planned.length; i++) {
    const plan = planned[i]!;
    if (plan.kind === "limit" && !plan.shadow) indices.push(i);
  }
  return indices;
}

/** Descriptors grouped by cost (a stack has one cost), in order of first appearance. */
function groupsByCost(planned: readonly Planned[], indices: readonly number[]): { cost: number; indices: number[] }[] {
  const groups = new Map<number, number[]>();
  for (const index of indices) {
    const { cost } = planned[index] as LimitPlan;
    const group = groups.get(cost);
    if (group) group.push(index);
    else groups.set(cost, [index]);
  }
  return [...groups].map(([cost, indices]) => ({ cost, indices }));
}
