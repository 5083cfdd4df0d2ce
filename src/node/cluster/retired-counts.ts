/**
 * `--workers`: what a worker counted stays in the summed /metrics after it dies. Prometheus
 * reads a counter that goes down as a reset (rate() then counts the whole value again), so the
 * primary keeps each worker's last reported counters and histograms, and when a worker dies
 * adds them to a retired part that every later sum includes. Gauges die with their worker (a
 * dead worker holds no leases, no connections). What a worker counted after the last scrape
 * it answered is lost with it; no sum ever goes down.
 */

/** One metric of prom-client's getMetricsAsJSON, as much of it as the sum needs. */
interface MetricJson {
  name: string;
  type: string;
  aggregator?: string;
  values: Array<{ value: number; labels: Record<string, string | number>; metricName?: string }>;
}

/** Counters and histograms only accumulate: the parts of a dead worker that a later sum keeps. */
const CUMULATIVE = new Set(["counter", "histogram"]);

const isMetric = (metric: unknown): metric is MetricJson =>
  typeof metric === "object" && metric !== null && typeof (metric as MetricJson).name === "string" && Array.isArray((metric as MetricJson).values);

/** The counters and histograms of one worker's part. */
export function cumulativeOf(part: readonly unknown[]): MetricJson[] {
  return part.filter((metric): metric is MetricJson => isMetric(metric) && CUMULATIVE.has(metric.type));
}

const sampleKey = (sample: MetricJson["values"][number]) =>
  `${sample.metricName ?? ""}\u0000${JSON.stringify(Object.entries(sample.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))}`;

/**
 * `retired` and a dead worker's cumulative part as one part, each series combined as the
 * primary's sum combines it (the metric's aggregator: `max` for what every worker sees alike,
 * such as reloads; else the sum).
 */
export function retire(retired: readonly MetricJson[], part: readonly unknown[]): MetricJson[] {
  const byName = new Map<string, { metric: MetricJson; samples: Map<string, MetricJson["values"][number]> }>();
  for (const metric of [...retired, ...cumulativeOf(part)]) {
    let entry = byName.get(metric.name);
    if (!entry) {
      entry = { metric: { ...metric, values: [] }, samples: new Map() };
      byName.set(metric.name, entry);
    }
    for (const sample of metric.values) {
      const key = sampleKey(sample);
      const before = entry.samples.get(key);
      if (!before) entry.samples.set(key, { ...sample, labels: { ...sample.labels } });
      else if (entry.metric.aggregator === "max") before.value = Math.max(before.value, sample.value);
      else if (entry.metric.aggregator === "min") before.value = Math.min(before.value, sample.value);
      else before.value += sample.value;
    }
  }
  return [...byName.values()].map(({ metric, samples }) => ({ ...metric, values: [...samples.values()] }));
}

export type { MetricJson };
