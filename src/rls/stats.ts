/** The reference's per-rule stats, in its words (README "Statistics"). */
export interface RuleCounts {
  total_hits: number;
  over_limit: number;
  near_limit: number;
  within_limit: number;
  shadow_mode: number;
}

export const RULE_COUNTS: readonly (keyof RuleCounts)[] = ["total_hits", "over_limit", "near_limit", "within_limit", "shadow_mode"];

/** What one descriptor's decision adds to its rule's counts. */
export interface RuleOutcome {
  domain: string;
  /** The rule's stat key, or with the request's values for a detailed_metric rule. */
  metricKey: string;
  statKey: string;
  cost: number;
  overLimit: boolean;
  /** Admitted with more than NEAR_LIMIT_RATIO of the limit used. */
  nearLimit: boolean;
  shadow: boolean;
}

/** The reference's near-limit threshold: 80 % of the limit used. */
export const NEAR_LIMIT_RATIO = 0.8;
/** Series held at most for detailed_metric keys (values from requests); past it they count under the rule's key. */
export const MAX_DETAILED_SERIES = 1000;
/** Metric keys per domain RlsStats finds without building a text (rule keys, and detailed keys up to the bound). */
const MAX_INDEXED_KEYS = 16_384;

/**
 * Counts per (domain, key): the key is the rule's path in the config (`message_type_marketing.to_number`),
 * never a request's value, unless the rule sets `detailed_metric` (then bounded by MAX_DETAILED_SERIES).
 * Plain numbers here; src/node/grpc/metrics.ts reads them into Prometheus at scrape time.
 */
export class RlsStats {
  readonly counts = new Map<string, { domain: string; key: string; counts: RuleCounts }>();
  /** Told of each new series once, when it is first counted (metrics.ts names it for PROMETHEUS_MAPPER_YAML then, not per scrape). */
  onSeries?: (entry: { domain: string; key: string; counts: RuleCounts }) => void;
  /** The same entries by domain, then metric key: found without building a text per descriptor. */
  private readonly byDomain = new Map<string, Map<string, { domain: string; key: string; counts: RuleCounts }>>();
  private detailedSeries = 0;

  record(outcome: RuleOutcome): void {
    const entry = this.entryFor(outcome);
    const { counts } = entry;
    counts.total_hits += outcome.cost;
    if (outcome.overLimit) {
      counts.over_limit += outcome.cost;
      if (outcome.shadow) counts.shadow_mode += outcome.cost;
      return;
    }
    counts.within_limit += outcome.cost;
    if (outcome.nearLimit) counts.near_limit += outcome.cost;
  }

  private entryFor(outcome: RuleOutcome) {
    let keys = this.byDomain.get(outcome.domain);
    const known = keys?.get(outcome.metricKey);
    if (known) return known;
    const entry = this.newEntryFor(outcome);
    if (!keys) this.byDomain.set(outcome.domain, (keys = new Map()));
    // Request values (detailed_metric) are the caller's: the index is bounded, and keys past it take the slower path.
    if (keys.size < MAX_INDEXED_KEYS) keys.set(outcome.metricKey, entry);
    return entry;
  }

  private newEntryFor(outcome: RuleOutcome) {
    let key = outcome.metricKey;
    let id = `${outcome.domain}\u0000${key}`;
    let entry = this.counts.get(id);
    if (entry) return entry;
    if (key !== outcome.statKey) {
      if (this.detailedSeries >= MAX_DETAILED_SERIES) {
        key = outcome.statKey;
        id = `${outcome.domain}\u0000${key}`;
        entry = this.counts.get(id);
        if (entry) return entry;
      } else this.detailedSeries++;
    }
    entry = { domain: outcome.domain, key, counts: { total_hits: 0, over_limit: 0, near_limit: 0, within_limit: 0, shadow_mode: 0 } };
    this.counts.set(id, entry);
    this.onSeries?.(entry);
    return entry;
  }
}
