// The Spillway Worker with the Durable Object taken out: the same Hono app, routes,
// validation and headers, deciding in an in-isolate MemoryStore. Only for bench:worker,
// where the difference to the real Worker is the Durable Object's cost. Never deploy it:
// each isolate would keep its own counts.
import rawConfig from "../../spillway.config.json";
import { parseConfig } from "../../src/config.js";
import { createApp } from "../../src/http/app.js";
import { SpillwayService } from "../../src/service.js";
import { MemoryStore } from "../../src/stores/memory.js";

const service = new SpillwayService(new MemoryStore(), parseConfig(rawConfig));
const app = createApp({ service, tokenOf: (env) => (env as { SPILLWAY_TOKEN?: string }).SPILLWAY_TOKEN });

export default { fetch: app.fetch };
