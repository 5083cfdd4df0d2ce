import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/hono.js";
import type { Env } from "../../src/worker/env.js";
import { createWorker } from "../../src/worker/index.js";
import { TOKEN, checkWith, uniqueKey } from "./helpers.js";

const config = { policies: [{ name: "two-per-hour", algorithm: "fixed-window", limit: 2, period: "1h" }] };

function check(worker: ReturnType<typeof createWorker>, workerEnv: Env, key: string): Promise<Response> {
  return checkWith(worker, workerEnv, key, "two-per-hour");
}

describe("createWorker(config, { store })", () => {
  it("decides with the given store instead of the LIMITER Durable Objects, built once", async () => {
    const store = new MemoryStore();
    let calls = 0;
    // No LIMITER binding at all: a Durable Object call would throw.
    const worker = createWorker(config, { store: () => (calls++, store) });
    const workerEnv = { SPILLWAY_TOKEN: TOKEN, SPILLWAY_LOG_DENIALS: "false" } as Env;
    const key = uniqueKey("own-store");
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await check(worker, workerEnv, key)).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect(calls).toBe(1);
    // The counts are in the given store.
    expect((await store.peek(key, worker.config.policies)).remaining).toBe(0);
    expect((await store.peek(uniqueKey("untouched"), worker.config.policies)).remaining).toBe(2);
  });

  it("refuses options that are not an object, a store that is not a function, naming the field", () => {
    expect(() => createWorker(config, null as never)).toThrow("createWorker options: must be an object");
    expect(() => createWorker(config, { store: new MemoryStore() as never })).toThrow("createWorker options.store: must be a function (env) => Limiter");
  });

  it("names the missing methods when the store function returns something that is not a Limiter", async () => {
    const worker = createWorker(config, { store: () => ({ check: () => null }) as never });
    await expect(check(worker, { SPILLWAY_TOKEN: TOKEN } as Env, uniqueKey("bad-store"))).rejects.toThrow(
      "createWorker options.store: must return a Limiter; it has no peek, reset, acquire, release, extend, health",
    );
  });
});
