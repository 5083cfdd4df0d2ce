// The Spillway Worker with the Durable Object taken out: the same createWorker app, routes,
// validation and headers, deciding in an in-isolate MemoryStore. Only for bench:worker,
// where the difference to the real Worker is the Durable Object's cost. Never deploy it:
// each isolate would keep its own counts.
import config from "../../spillway.config.json";
import { MemoryStore } from "../../src/hono.js";
import { createWorker } from "../../src/worker/index.js";

const store = new MemoryStore();
const spillway = createWorker(config, { store: () => store });

export default { fetch: spillway.fetch };
