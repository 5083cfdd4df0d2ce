import { it } from "vitest";
import { parsePolicy, parsePolicyList, resolvePolicies } from "../../src/core/policy.js";
const tryIt = (input: unknown) => { try { console.log(JSON.stringify(input), "=>", JSON.stringify(parsePolicy(input, "policy"))); } catch (e) { console.log(JSON.stringify(input), "=>", (e as Error).message, (e as {field?: string}).field); } };
it("scratch", () => {
  tryIt({ name: "a", limit: -1, period: "1s" });
  tryIt({ name: "a", period: "1s" });
  tryIt({ limit: 1, period: "1s" });
  tryIt({ name: "A", limit: 1, period: "1s" });
  tryIt({ name: "a", limit: 1.5, period: "1s" });
  tryIt({ name: "a", limit: "5", period: "1s" });
  tryIt({ name: "a", limit: 1e9 + 1, period: "1s" });
  tryIt({ name: "a", limit: 1, period: "1w" });
  tryIt({ name: "a", limit: 1, period: 0 });
  tryIt({ name: "a", limit: 1, period: "0ms" });
  tryIt({ name: "a", limit: 1, period: "367d" });
  tryIt({ name: "a", limit: 1, period: true });
  tryIt({ name: "a", limit: 1, period: null });
  tryIt({ name: "a", limit: 1, period: "0.5ms" });
  tryIt({ name: "a", limit: 1, period: 1.5 });
  tryIt({ name: "a", limit: 1, period: "1s", algorithm: "leaky" });
  tryIt({ name: "a", limit: 1, period: "1s", colour: "red" });
  tryIt({ name: "a", limit: 1, period: "1s", failMode: "maybe" });
  tryIt({ name: "a", limit: 1, period: "1s", burst: 0 });
  tryIt({ name: "a", limit: 1, period: "1s", burst: 2, algorithm: "fixed-window" });
  tryIt({ name: "a", limit: 1, period: "1s", lease: "1s" });
  tryIt({ name: "a", limit: 1, period: "1s", algorithm: "concurrency" });
  tryIt({ name: "a", limit: 1, algorithm: "concurrency", lease: "0s" });
  tryIt({ name: "a", limit: 1, algorithm: "concurrency" });
  tryIt({ name: "a", limit: 1, algorithm: "fixed-window" });
  tryIt({ name: "a", limit: 100001, period: "1s", algorithm: "sliding-log" });
  tryIt(null);
  tryIt("a");
  try { parsePolicyList([{ name: "a", limit: 1, period: 1 }, { name: "a", limit: 2, period: 1 }], "policies"); } catch (e) { console.log((e as Error).message); }
  try { parsePolicyList([{ name: "a", limit: 1, period: 1 }, { name: "B", limit: 2, period: 1 }], "policies"); } catch (e) { console.log((e as Error).message); }
  try { resolvePolicies(["x"], new Map()); } catch (e) { console.log((e as Error).name, (e as Error).message); }
});
