// This repository's own Worker (`npm start`, `wrangler deploy`): the demo config, built the
// way `spillway init` scaffolds a user's Worker.
import config from "../spillway.config.json";
import { LimiterObject, OverridesObject, createWorker } from "../src/worker/index.js";

const spillway = createWorker(config);

export { LimiterObject, OverridesObject };
export const SpillwayRpc = spillway.Rpc;
export default { fetch: spillway.fetch } satisfies ExportedHandler<import("../src/worker/env.js").Env>;
