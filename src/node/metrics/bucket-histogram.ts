import type { Registry } from "prom-client";

/** One label value's counts: per bucket (not cumulative), then the sum and count of all values. */
class Buckets {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(size: number) {
    this.counts = new Float64Array(size);
  }
}

/**
 * A Prometheus histogram with one label, for the request path: `child(value).observe(x)` is a
 * scan of the bounds and three additions. prom-client's Histogram hashes its labels and turns
 * each bound into a string key on every observation, which cost the gateway about a
 * microsecond per request (BENCHMARKS.md, "Gateway"); this one does that work at scrape time.
 * It registers itself in `registry` and renders as prom-client's Histogram does.
 */
export class BucketHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #labelName: string;
  readonly #bounds: readonly number[];
  readonly #children = new Map<string, Buckets>();

  constructor(options: { name: string; help: string; labelName: string; buckets: readonly number[]; registry: Registry }) {
    this.name = options.name;
    this.help = options.help;
    this.#labelName = options.labelName;
    this.#bounds = options.buckets;
    options.registry.registerMetric(this as never);
  }

  /** The counts of one label value (label values come from the config: the map stays small). */
  child(labelValue: string): { observe(value: number): void } {
    let buckets = this.#children.get(labelValue);
    if (!buckets) this.#children.set(labelValue, (buckets = new Buckets(this.#bounds.length)));
    const bounds = this.#bounds;
    const found = buckets;
    return {
      observe(value: number): void {
        let i = 0;
        while (i < bounds.length && value > bounds[i]!) i++;
        if (i < bounds.length) found.counts[i]!++;
        found.sum += value;
        found.count++;
      },
    };
  }

  /** What prom-client's registry renders: cumulative buckets, +Inf, _sum and _count per label value. */
  get(): { name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[] } {
    const values = [];
    const name = this.#labelName;
    // Every label in `labels` (as prom-client's Histogram answers after its splayLabels): the
    // --workers sum (AggregatorRegistry) tells series apart by `labels` alone.
    for (const [labelValue, buckets] of this.#children) {
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += buckets.counts[i]!;
        values.push({ labels: { le: bound, [name]: labelValue }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: "+Inf", [name]: labelValue }, value: buckets.count, metricName: `${this.name}_bucket` });
      values.push({ labels: { [name]: labelValue }, value: buckets.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { [name]: labelValue }, value: buckets.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** registry.resetMetrics(): every count back to 0. */
  reset(): void {
    for (const buckets of this.#children.values()) {
      buckets.counts.fill(0);
      buckets.sum = 0;
      buckets.count = 0;
    }
  }
}
