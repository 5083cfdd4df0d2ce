import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { BucketHistogram } from "../../../../src/node/metrics/bucket-histogram.js";

const BUCKETS = [0.001, 0.005, 0.01, 0.5, 2.5];
// On a bound, between bounds, below the first, above the last (+Inf only), zero.
const OBSERVED: [string, number][] = [
  ["memory", 0.001],
  ["memory", 0.0003],
  ["memory", 0.007],
  ["redis", 0.5],
  ["redis", 3],
  ["memory", 0],
  ["redis", 0.0049],
];

function pair() {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({ name: "h_seconds", help: "A histogram.", labelNames: ["store"], buckets: BUCKETS, registers: [theirs] });
  const histogram = new BucketHistogram({ name: "h_seconds", help: "A histogram.", labelName: "store", buckets: BUCKETS, registry: ours });
  return { theirs, ours, reference, histogram };
}

describe("BucketHistogram", () => {
  it("renders exactly what prom-client's Histogram renders for the same observations", async () => {
    const { theirs, ours, reference, histogram } = pair();
    for (const [store, value] of OBSERVED) {
      reference.labels(store).observe(value);
      histogram.child(store).observe(value);
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('h_seconds_bucket{le="0.001",store="memory"} 3');
    expect(text).toContain('h_seconds_bucket{le="+Inf",store="redis"} 3');
    expect(text).toContain('h_seconds_count{store="redis"} 3');
  });

  it("starts a label value at zeros, and resetMetrics sets every count back to 0", async () => {
    const { theirs, ours, reference, histogram } = pair();
    reference.labels("memory").observe(0);
    reference.reset();
    reference.labels("memory").observe(0.002);
    histogram.child("memory").observe(0.7);
    ours.resetMetrics();
    histogram.child("memory").observe(0.002);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
