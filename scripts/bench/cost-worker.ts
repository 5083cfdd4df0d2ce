// bench:cost only: the Worker the scenarios run in (wrangler.cost.toml). Its LIMITER is the real
// LimiterObject with metered storage; its SpillwayRpc is what a service binding reaches. The
// gateway scenarios build their own Worker with createWorker (their origin's port is known late).
import { OverridesObject, createWorker } from "../../src/worker/index.js";
import { API_POLICIES } from "./cost-config.js";

export { MeteredLimiterObject } from "./storage-probe.js";
export { OverridesObject };

const spillway = createWorker({ policies: API_POLICIES });
export const SpillwayRpc = spillway.Rpc;
export default { fetch: spillway.fetch } satisfies ExportedHandler<import("../../src/worker/env.js").Env>;
