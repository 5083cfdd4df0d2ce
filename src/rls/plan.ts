import { renamedPolicy } from "../core/store-policies.js";
import type { Policy } from "../core/types.js";
import { type Entry, matchDescriptor } from "./match.js";
import type { RlsDescriptor, RlsRequest } from "./request.js";
import { type RlsConfig, type RlsDomain, type RlsNode, type RlsPolicy, type RlsRule, UNITS, UNIT_MS } from "./types.js";

/** A one-way hash of text, as lowercase hex (Node passes SHA-256): names counters in the store. */
export type Digest = (text: string) => string;

/** One limit of a matched descriptor, as the store sees it and as the answer reports it. */
export interface CounterLimit {
  /** The policy under the counter's own name (`r.<hash>`): state belongs to (key, name). */
  stored: Policy;
  /** The limit as written, its name the label headers show. */
  limit: RlsPolicy;
  ruleName: string | undefined;
  /** The status's current_limit for it, one object per rule limit (read only). */
  currentLimit: CurrentLimit;
}

/** RateLimitResponse.RateLimit, as a status reports it. */
export interface CurrentLimit {
  name: string;
  requests_per_unit: number;
  unit: number;
}

/** What one descriptor of a request is held to. */
export type Planned =
  | { kind: "none" }
  | { kind: "unlimited" }
  | ({ kind: "block"; unit: number; ruleName: string | undefined } & Counted)
  | ({ kind: "limit"; counterId: string; limits: readonly CounterLimit[] } & Counted);

/** What a limited descriptor's metrics and cost are. */
export interface Counted {
  shadow: boolean;
  /** quota_mode on the matched descriptor (the global QUOTA_MODE is the service's). */
  quota: boolean;
  /** The matched descriptor's `metadata`, for dynamic_metadata when it passes. */
  metadata: Readonly<Record<string, unknown>> | undefined;
  /** The metrics' key: statKey, or with the request's values for detailed_metric. */
  metricKey: string;
  /** The rule's stat key (what a detailed key folds into past the series bound). */
  statKey: string;
  cost: number;
}

/** Counters named per rule (one rule object per config load) and entries: bounded, cleared when full. */
const MAX_CACHED_COUNTERS = 16_384;

/**
 * Turns a request into one plan per descriptor: matching (src/rls/match.ts), the `limit`
 * override, and `replaces` (a matched rule named by another matched rule's `replaces` is
 * dropped, as in the reference). Counter names are cached: hashing is the planner's only cost.
 */
export class Planner {
  private readonly digest: Digest;
  /** Per rule (one object per config load): its counters by entries, bounded, started afresh when full. */
  private readonly counters = new WeakMap<RlsRule, CounterNode & { count: number }>();
  private readonly overrides = new Map<string, RlsRule>();
  private readonly currentLimits = new WeakMap<RlsPolicy, CurrentLimit>();

  constructor(digest: Digest) {
    this.digest = digest;
  }

  plan(config: RlsConfig, request: RlsRequest): { domain?: RlsDomain; planned: Planned[] } {
    const descriptors = request.descriptors;
    const planned: Planned[] = new Array(descriptors.length);
    const domain = config.domains.get(request.domain);
    if (!domain) {
      for (let i = 0; i < descriptors.length; i++) planned[i] = NONE;
      return { planned };
    }
    const matches: (Resolved | undefined)[] = new Array(descriptors.length);
    let replaced: Set<string> | undefined;
    for (let i = 0; i < descriptors.length; i++) {
      const match = (matches[i] = this.ruleOf(domain, descriptors[i]!));
      if (match && match.rule.replaces.length > 0) for (const name of match.rule.replaces) (replaced ??= new Set()).add(name);
    }
    for (let i = 0; i < descriptors.length; i++) {
      const match = matches[i];
      planned[i] = !match || (match.rule.name !== undefined && replaced?.has(match.rule.name)) ? NONE : this.planOf(domain, match, descriptors[i]!.cost);
    }
    return { domain, planned };
  }

  private planOf(domain: RlsDomain, match: Resolved, cost: number): Planned {
    const { rule, node } = match;
    if (rule.kind === "unlimited") return UNLIMITED;
    // Plans are built field by field in one order (no spread): every limit plan, and every
    // block plan, shares one shape, so the code that reads them stays monomorphic.
    const shadow = node?.shadowMode ?? false;
    const quota = node?.quotaMode ?? false;
    const metadata = node?.metadata;
    if (rule.kind === "block") return { kind: "block", shadow, quota, metadata, metricKey: match.metricKey, statKey: match.statKey, cost, unit: rule.unit, ruleName: rule.name };
    const counters = this.countersOf(domain, rule, match.counterEntries);
    // The usual cost, 1: one plan per counter, kept with its names (it depends on nothing else).
    if (cost === 1 && counters.costOne) return counters.costOne;
    const plan: Planned = { kind: "limit", shadow, quota, metadata, metricKey: match.metricKey, statKey: match.statKey, cost, counterId: counters.counterId, limits: counters.limits };
    if (cost === 1) counters.costOne = plan;
    return plan;
  }

  private ruleOf(domain: RlsDomain, descriptor: RlsDescriptor): Resolved | undefined {
    if (descriptor.override) {
      // The reference's override: the descriptor's own limit, never in shadow mode, counted
      // under its entries; its metrics under the keys alone (the values are the caller's).
      const statKey = descriptor.entries.map(([key]) => key).join(".");
      return { rule: this.overrideRule(descriptor.override), metricKey: statKey, statKey, counterEntries: descriptor.entries };
    }
    const match = matchDescriptor(domain, descriptor.entries);
    return match && { rule: match.rule, node: match.node, metricKey: match.metricKey, statKey: match.node.statKey, counterEntries: match.counterEntries };
  }

  private overrideRule(override: NonNullable<RlsDescriptor["override"]>): RlsRule {
    const id = `${override.requestsPerUnit}/${override.unit}`;
    let rule = this.overrides.get(id);
    if (rule) return rule;
    const unit = UNITS[override.unit];
    if (override.requestsPerUnit === 0) rule = { kind: "block", replaces: [], unit };
    else {
      const policy: Policy = { name: `override-${override.requestsPerUnit}-per-${override.unit}`, algorithm: "fixed-window", limit: override.requestsPerUnit, periodMs: UNIT_MS[override.unit], burst: override.requestsPerUnit, leaseMs: 30_000, failMode: "closed" };
      rule = { kind: "limit", replaces: [], policies: [{ policy, unit, requestsPerUnit: override.requestsPerUnit }] };
    }
    if (this.overrides.size >= 256) this.overrides.clear(); // the caller picks the values: bounded
    this.overrides.set(id, rule);
    return rule;
  }

  /** A rule limit's current_limit: one object for all its counters (a counter per address would otherwise hold its own). */
  private currentLimitOf(limit: RlsPolicy): CurrentLimit {
    let reported = this.currentLimits.get(limit);
    // Frozen: shared by every counter of the limit, and the gRPC edge keeps its encoding by identity.
    if (!reported) this.currentLimits.set(limit, (reported = Object.freeze({ name: limit.policy.name, requests_per_unit: limit.requestsPerUnit, unit: limit.unit })));
    return reported;
  }

  private countersOf(domain: RlsDomain, rule: Extract<RlsRule, { kind: "limit" }>, entries: readonly Entry[]): Counters {
    let root = this.counters.get(rule);
    if (!root || root.count >= MAX_CACHED_COUNTERS) this.counters.set(rule, (root = { count: 0, next: new Map() }));
    // Found by walking the entries, a key then a value a level (no text built per request).
    let node: CounterNode = root;
    for (let i = 0; i < entries.length; i++) node = childOf(childOf(node, entries[i]![0]), entries[i]![1]);
    if (node.counters) return node.counters;
    // Length-prefixed, so no two different entry lists spell the same text.
    let text = `${domain.name.length}:${domain.name}`;
    for (const [key, value] of entries) text += `|${key.length}:${key}${value.length}:${value}`;
    const counterId = this.digest(text).slice(0, 40);
    const limits = rule.policies.map((limit): CounterLimit => {
      // A checked policy under the counter's name: the store need not check each copy again.
      const stored = renamedPolicy(limit.policy, `r.${this.digest(`${counterId}/${limit.policy.name}`).slice(0, 40)}`);
      return { stored, limit, ruleName: rule.name, currentLimit: this.currentLimitOf(limit) };
    });
    root.count++;
    return (node.counters = { counterId, limits });
  }
}

/** A descriptor's counters: its id (a hash of the domain and entries) and its limits as stored. */
interface Counters {
  counterId: string;
  limits: CounterLimit[];
  /** Its plan at cost 1, made once (Planner.planOf). */
  costOne?: Planned;
}

/** What a descriptor matched: the rule, the config node (none for a `limit` override), and what it is counted and reported under. */
interface Resolved {
  rule: RlsRule;
  node?: RlsNode;
  counterEntries: readonly Entry[];
  metricKey: string;
  statKey: string;
}

const NONE: Planned = { kind: "none" };
const UNLIMITED: Planned = { kind: "unlimited" };

/** A level of Planner's counter cache: keys and values alternate; counters where an entry list ends. */
interface CounterNode {
  next?: Map<string, CounterNode>;
  counters?: Counters;
}

function childOf(node: CounterNode, text: string): CounterNode {
  const next = (node.next ??= new Map());
  let child = next.get(text);
  if (!child) next.set(text, (child = {}));
  return child;
}
