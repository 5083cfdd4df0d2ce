import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/hono.js";
import { createApiWorker } from "../../src/worker/api.js";
import type { Env } from "../../src/worker/env.js";
import { TOKEN, checkWith, uniqueKey } from "./helpers.js";

const policies = [{ name: "two-per-hour", algorithm: "fixed-window", limit: 2, period: "1h" }];

// spillway/worker/api: the Worker spillway init writes, without the gateway's code in its bundle.
describe("createApiWorker (spillway/worker/api)", () => {
  it("decides the /v1 API as createWorker does: a burst admits exactly the limit", async () => {
    const worker = createApiWorker({ policies }, { store: () => store });
    const store = new MemoryStore();
    const workerEnv = { SPILLWAY_TOKEN: TOKEN, SPILLWAY_LOG_DENIALS: "false" } as Env;
    const key = uniqueKey("api-worker");
    const statuses = await Promise.all(Array.from({ length: 20 }, () => checkWith(worker, workerEnv, key, "two-per-hour").then((answer) => answer.status)));
    expect(statuses.filter((status) => status === 200)).toHaveLength(2);
    expect(statuses.filter((status) => status === 429)).toHaveLength(18);
  });

  it("refuses a config with an origin, naming it and what to import instead", () => {
    const config = { origin: "https://api.example.com", policies, routes: [{ match: { path: "/*" }, key: "ip", policies: ["two-per-hour"] }] };
    expect(() => createApiWorker(config)).toThrow(/^origin: this Worker is built by createApiWorker \(spillway\/worker\/api\), which serves the \/v1 API only: import createWorker from "spillway\/worker" to serve an origin and routes$/);
  });
});
