import { describe, expect, it } from "vitest";
import { cumulativeOf, retire } from "../../../../src/node/cluster/retired-counts.js";

// What the --workers primary keeps of a dead worker for every later /metrics sum
// (test/redis/workers-replaced.test.ts runs it with real workers killed).

const counter = (name: string, value: number, labels: Record<string, string> = {}, aggregator = "sum") => ({ name, help: "", type: "counter", aggregator, values: [{ value, labels }] });
const gauge = (name: string, value: number) => ({ name, help: "", type: "gauge", aggregator: "sum", values: [{ value, labels: {} }] });
const histogram = (count: number) => ({
  name: "d_seconds",
  help: "",
  type: "histogram",
  aggregator: "sum",
  values: [
    { value: count, labels: { le: "+Inf", store: "redis" }, metricName: "d_seconds_bucket" },
    { value: count, labels: { store: "redis" }, metricName: "d_seconds_count" },
  ],
});

describe("retire: a dead worker's counters and histograms, kept", () => {
  it("keeps counters and histograms, drops gauges", () => {
    expect(cumulativeOf([counter("a_total", 1), gauge("leases", 3), histogram(2), "not a metric"]).map((metric) => metric.name)).toEqual(["a_total", "d_seconds"]);
  });

  it("adds each dead worker's series to the retired ones, label by label; `max` metrics keep the highest", () => {
    let retired = retire([], [counter("a_total", 5, { policy: "p" }), counter("resets_total", 2, {}, "max"), histogram(3), gauge("leases", 9)]);
    retired = retire(retired, [counter("a_total", 7, { policy: "p" }), counter("a_total", 1, { policy: "q" }), counter("resets_total", 1, {}, "max"), histogram(4)]);
    const byName = new Map(retired.map((metric) => [metric.name, metric.values.map((sample) => [sample.metricName ?? metric.name, sample.labels, sample.value])]));
    expect(byName.get("a_total")).toEqual([["a_total", { policy: "p" }, 12], ["a_total", { policy: "q" }, 1]]);
    expect(byName.get("resets_total")).toEqual([["resets_total", {}, 2]]);
    expect(byName.get("d_seconds")).toEqual([["d_seconds_bucket", { le: "+Inf", store: "redis" }, 7], ["d_seconds_count", { store: "redis" }, 7]]);
    expect(byName.has("leases")).toBe(false);
  });

  it("never changes what it was given", () => {
    const part = [counter("a_total", 5)];
    const retired = retire([], part);
    retire(retired, [counter("a_total", 1)]);
    expect(part[0]!.values[0]!.value).toBe(5);
    expect(retired[0]!.values[0]!.value).toBe(5);
  });
});
