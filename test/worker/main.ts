// The Worker under test: the repository's Worker, plus a LimiterObject on a test clock
// (bound as CLOCKED_LIMITER in wrangler.test.toml) for the conformance table.
export { default, LimiterObject, OverridesObject, SpillwayRpc } from "../../demo/worker.js";
export { ClockedLimiterObject } from "./clocked-limiter-object.js";
export { MeteredLimiterObject } from "../../scripts/bench/storage-probe.js";
