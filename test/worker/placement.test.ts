import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/worker/env.js";
import { createWorker } from "../../src/worker/index.js";
import { TOKEN, checkWith, storedStates, uniqueKey } from "./helpers.js";

// `durableObjects` in the config: every namespace the Worker opens is placed by it. workerd
// takes a location hint (and has nowhere else to put an object), but refuses jurisdictions
// ("not implemented in workerd"): the real binding shows that the jurisdiction reaches it, and
// a binding that records what it is asked (then opens the real objects) shows where each goes.
const policies = [{ name: "two-per-hour", algorithm: "fixed-window", limit: 2, period: "1h" }];
const realEnv = env as unknown as Env;

type Asked = { jurisdiction?: string; locationHint?: string; name: string };
/** The binding, recording the jurisdiction and hint of every object opened through it. */
function recording<T extends Rpc.DurableObjectBranded | undefined>(real: DurableObjectNamespace<T>, asked: Asked[], jurisdiction?: string): DurableObjectNamespace<T> {
  return {
    jurisdiction: (name: string) => recording(real, asked, name),
    getByName: (name: string, options?: DurableObjectNamespaceGetDurableObjectOptions) => {
      asked.push({ name, ...(jurisdiction ? { jurisdiction } : {}), ...(options?.locationHint ? { locationHint: options.locationHint } : {}) });
      return real.getByName(name, options);
    },
  } as unknown as DurableObjectNamespace<T>;
}

function workerEnv(asked: Asked[]): Env {
  return { LIMITER: recording(realEnv.LIMITER, asked), OVERRIDES: recording(realEnv.OVERRIDES!, asked), SPILLWAY_TOKEN: TOKEN, SPILLWAY_LOG_DENIALS: "false" } as Env;
}

describe("durableObjects placement", () => {
  it("opens each key's object with the configured jurisdiction and location hint", async () => {
    const worker = createWorker({ policies, durableObjects: { jurisdiction: "eu", locationHint: "weur" } });
    const asked: Asked[] = [];
    const key = uniqueKey("eu");
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await checkWith(worker, workerEnv(asked), key, "two-per-hour")).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect(asked.filter((call) => call.name === key)).toEqual(Array(3).fill({ name: key, jurisdiction: "eu", locationHint: "weur" }));
  });

  it("decides with a location hint alone, in the namespace's own objects", async () => {
    const worker = createWorker({ policies, durableObjects: { locationHint: "apac" } });
    const key = uniqueKey("hint");
    expect((await checkWith(worker, realEnv, key, "two-per-hour")).status).toBe(200);
    expect(await storedStates(env.LIMITER.getByName(key))).toBe(1);
  });

  it("opens the overrides object in the jurisdiction too", async () => {
    const worker = createWorker({ policies, durableObjects: { jurisdiction: "eu" } });
    const asked: Asked[] = [];
    const ctx = createExecutionContext();
    const body = JSON.stringify({ policy: "two-per-hour", key: uniqueKey("override"), limit: 5 });
    const put = await worker.fetch(new Request("http://spillway.test/v1/overrides", { method: "PUT", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body }), workerEnv(asked), ctx);
    await waitOnExecutionContext(ctx);
    expect(put.status).toBe(200);
    expect(asked).toContainEqual({ name: "overrides", jurisdiction: "eu" });
    expect(asked.every((call) => call.jurisdiction === "eu")).toBe(true);
  });

  it("hands the jurisdiction to the real binding (which workerd refuses: it runs none)", async () => {
    const worker = createWorker({ policies, durableObjects: { jurisdiction: "eu" } });
    await expect(checkWith(worker, realEnv, uniqueKey("workerd"), "two-per-hour")).rejects.toThrow("Jurisdiction restrictions are not implemented in workerd");
  });

  it("without durableObjects, opens objects as the binding does", async () => {
    const worker = createWorker({ policies });
    const asked: Asked[] = [];
    const key = uniqueKey("plain");
    expect((await checkWith(worker, workerEnv(asked), key, "two-per-hour")).status).toBe(200);
    expect(asked.filter((call) => call.name === key)).toEqual([{ name: key }]);
    // The overrides object (read once per overridesTtl) is opened plainly too.
    expect(asked.every((call) => call.jurisdiction === undefined && call.locationHint === undefined)).toBe(true);
  });

  it("refuses a hint or jurisdiction Cloudflare does not know, naming the field", () => {
    expect(() => createWorker({ policies, durableObjects: { jurisdiction: "mars" } })).toThrow(/durableObjects\.jurisdiction: must be one of "eu", "fedramp"/);
    expect(() => createWorker({ policies, durableObjects: { locationHint: "EU" } })).toThrow(/durableObjects\.locationHint: must be one of "wnam"/);
    expect(() => createWorker({ policies, durableObjects: { region: "eu" } })).toThrow(/durableObjects\.region/);
    expect(() => createWorker({ policies, durableObjects: "eu" })).toThrow(/durableObjects: must be an object/);
  });
});
