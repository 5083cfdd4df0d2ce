// bench:cost's scenarios, run inside workerd by scripts/bench/cost.ts (cost.vitest.config.ts).
// Each scenario sends its decisions through the real Worker (createWorker: the gateway, the /v1
// API, the service binding), then waits until its keys are idle and their alarms have run, and
// reports what the probe counted (scripts/bench/storage-probe.ts) in the test's meta.
import { createExecutionContext, runDurableObjectAlarm, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { inject, it } from "vitest";
import type { Env } from "../../src/worker/env.js";
import { type SpillwayWorker, createWorker } from "../../src/worker/index.js";
import { GATEWAY_CONFIG } from "./cost-config.js";
import type { MeteredLimiterObject, StorageMeter } from "./storage-probe.js";

/** What one scenario cost, summed over its keys. */
export interface ScenarioCost {
  label: string;
  decisions: number;
  workerInvocations: number;
  objectRequests: number;
  /** Of objectRequests: those to the overrides object. */
  overridesRequests: number;
  rowsRead: number;
  rowsWritten: number;
  alarmsSet: number;
  deleteAlls: number;
  /** Wall time of the object calls as the Worker saw them (an upper bound of the objects' active time). */
  objectCallMs: number;
  keys: number;
  /** Keys still holding storage once idle, and their bytes above an untouched object's. */
  keysLeft: number;
  bytesLeft: number;
}

declare module "vitest" {
  interface TaskMeta {
    cost?: ScenarioCost;
  }
}

const limiters = (env as unknown as { LIMITER: DurableObjectNamespace<MeteredLimiterObject> }).LIMITER;
/** Past every scenario state's fresh time (a sliding window of 2 s: two periods): each key is idle. */
const IDLE_MS = 4500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The run's tally: the objects named, the calls to the overrides object, the calls' wall time. */
interface Tally {
  names: Set<string>;
  overridesCalls: number;
  callMs: number;
}

/** A namespace that records each object it opens and times every call made on its stubs. */
function recorded<T extends Rpc.DurableObjectBranded | undefined>(real: DurableObjectNamespace<T>, tally: Tally, onCall: (name: string) => void): DurableObjectNamespace<T> {
  const open = (name: string, options?: DurableObjectNamespaceGetDurableObjectOptions) => {
    const stub = real.getByName(name, options);
    return new Proxy(stub, {
      get(target, property) {
        const value = Reflect.get(target, property) as unknown;
        if (typeof value !== "function" || typeof property !== "string" || property === "then") return value;
        return async (...args: unknown[]) => {
          onCall(name);
          const startedMs = Date.now();
          try {
            return await Reflect.apply(value as (...args: unknown[]) => Promise<unknown>, target, args);
          } finally {
            tally.callMs += Date.now() - startedMs;
          }
        };
      },
    });
  };
  return { getByName: open, jurisdiction: () => recorded(real, tally, onCall) } as unknown as DurableObjectNamespace<T>;
}

/**
 * One Worker environment for the whole run, as one isolate serves many requests: its caches
 * (the overrides read once per overridesTtl, LocalCache's batches) live across scenarios. Each
 * scenario starts its tally from zero.
 */
const tally: Tally = { names: new Set(), overridesCalls: 0, callMs: 0 };
const real = env as unknown as Env;
const workerEnv = {
  ...real,
  LIMITER: recorded(real.LIMITER, tally, (name) => tally.names.add(name)),
  OVERRIDES: recorded(real.OVERRIDES!, tally, () => tally.overridesCalls++),
  SPILLWAY_TOKEN: "bench-token",
  SPILLWAY_LOG_DENIALS: "false",
} as Env;

function freshTally(): { tally: Tally; workerEnv: Env } {
  tally.names = new Set();
  tally.overridesCalls = 0;
  tally.callMs = 0;
  return { tally, workerEnv };
}

let untouchedBytes: number | undefined;
async function baselineBytes(): Promise<number> {
  untouchedBytes ??= await limiters.getByName(`untouched-${crypto.randomUUID()}`).storedBytes();
  return untouchedBytes;
}

/** Waits for the keys to go idle (their alarms run), then sums what their objects did. */
async function settle(label: string, decisions: number, workerInvocations: number, tally: Tally, extraNames: string[] = []): Promise<ScenarioCost> {
  await sleep(IDLE_MS);
  const names = [...tally.names, ...extraNames];
  const total: StorageMeter = { rowsRead: 0, rowsWritten: 0, alarmsSet: 0, deleteAlls: 0, alarms: 0, calls: 0 };
  const baseline = await baselineBytes();
  let keysLeft = 0;
  let bytesLeft = 0;
  for (const name of names) {
    const stub = limiters.getByName(name);
    // The clean-up alarm is due a minute after it was set (CLEANUP_DELAY_MS): run it now, as it would then run.
    await runDurableObjectAlarm(stub);
    const meter = await stub.meter();
    for (const field of Object.keys(total) as (keyof StorageMeter)[]) total[field] += meter[field];
    const bytes = (await stub.storedBytes()) - baseline;
    if (bytes > 0) {
      keysLeft++;
      bytesLeft += bytes;
    }
  }
  return {
    label,
    decisions,
    workerInvocations,
    objectRequests: total.calls + total.alarms + tally.overridesCalls,
    overridesRequests: tally.overridesCalls,
    rowsRead: total.rowsRead,
    rowsWritten: total.rowsWritten,
    alarmsSet: total.alarmsSet,
    deleteAlls: total.deleteAlls,
    objectCallMs: tally.callMs,
    keys: names.length,
    keysLeft,
    bytesLeft,
  };
}

let gateway: SpillwayWorker | undefined;
/** Sends one request through the gateway Worker; the body is read (a tap counts it); waitUntil work is kept to await at the end. */
async function send(workerEnv: Env, pending: Promise<void>[], path: string, headers: Record<string, string> = {}, init: RequestInit = {}): Promise<Response> {
  gateway ??= createWorker({ ...GATEWAY_CONFIG, origin: inject("costOrigin") });
  const ctx = createExecutionContext();
  const response = await gateway.fetch(new Request(`https://gateway.bench${path}`, { ...init, headers: { "cf-connecting-ip": "203.0.113.1", ...headers } }), workerEnv, ctx);
  await response.arrayBuffer();
  pending.push(waitOnExecutionContext(ctx));
  return response;
}

/** A scenario on the gateway: `run` sends its requests and answers the decisions made. */
type Send = (path: string, headers?: Record<string, string>, init?: RequestInit) => Promise<Response>;
function gatewayScenario(label: string, run: (send: Send) => Promise<number>) {
  it(label, async ({ task }) => {
    const { tally, workerEnv } = freshTally();
    const pending: Promise<void>[] = [];
    let invocations = 0;
    const decisions = await run((path, headers, init) => {
      // An admin call (PUT /v1/overrides) is set-up, not a decision's invocation.
      if (!init?.method) invocations++;
      return send(workerEnv, pending, path, headers, init);
    });
    await Promise.all(pending);
    task.meta.cost = await settle(label, decisions, invocations, tally);
  });
}

const id = () => crypto.randomUUID().slice(0, 8);

gatewayScenario("per-address traffic: 300 addresses, 1 to 3 requests each", async (request) => {
  let sent = 0;
  for (let address = 0; address < 300; address++) {
    const ip = `198.51.${Math.floor(address / 250)}.${(address % 250) + 1}`;
    for (let i = 0; i <= address % 3; i++, sent++) await request(`/address/${id()}`, { "cf-connecting-ip": ip });
  }
  return sent;
});

gatewayScenario("keys seen once: 200 addresses, one request each", async (request) => {
  for (let address = 0; address < 200; address++) await request(`/address/${id()}`, { "cf-connecting-ip": `192.0.2.${address + 1}` });
  return 200;
});

gatewayScenario("an API key, one policy: 100 requests", async (request) => {
  const key = `k-${id()}`;
  for (let i = 0; i < 100; i++) await request("/one/a", { "x-api-key": key });
  return 100;
});

gatewayScenario("an API key, a stack of 3 policies: 100 requests", async (request) => {
  const key = `k-${id()}`;
  for (let i = 0; i < 100; i++) await request("/stack/a", { "x-api-key": key });
  return 100;
});

gatewayScenario("a hot key: 300 requests", async (request) => {
  for (let i = 0; i < 300; i++) await request("/hot/a");
  return 300;
});

gatewayScenario("a hot key with `local` (share 0.1): 300 requests", async (request) => {
  for (let i = 0; i < 300; i++) await request("/hot-local/a");
  return 300;
});

gatewayScenario("a denied flood: limit 5, 100 requests (95 denied)", async (request) => {
  const key = `k-${id()}`;
  for (let i = 0; i < 100; i++) await request("/flood/a", { "x-api-key": key });
  return 100;
});

gatewayScenario("a counted route (count 401): 100 logins, 1 in 5 fails", async (request) => {
  const user = `u-${id()}`;
  for (let i = 0; i < 100; i++) await request("/login/a", { "x-user": user, ...(i % 5 === 4 ? { "x-fail": "1" } : {}) });
  return 100;
});

gatewayScenario("a counted route (count 401): 100 logins, every one fails", async (request) => {
  const user = `u-${id()}`;
  for (let i = 0; i < 100; i++) await request("/login/a", { "x-user": user, "x-fail": "1" });
  return 100;
});

gatewayScenario("a costed route (cost from the JSON body): 100 requests", async (request) => {
  const key = `k-${id()}`;
  for (let i = 0; i < 100; i++) await request("/llm/json/a", { "x-api-key": key });
  return 100;
});

gatewayScenario("a costed route (cost from a response header): 100 requests", async (request) => {
  const key = `k-${id()}`;
  for (let i = 0; i < 100; i++) await request("/llm/header/a", { "x-api-key": key });
  return 100;
});

gatewayScenario("a reserve/settle route (estimate 100 from x-max-tokens, cost from the JSON body): 100 requests", async (request) => {
  const key = `k-${id()}`;
  for (let i = 0; i < 100; i++) await request("/llm/reserve/a", { "x-api-key": key, "x-max-tokens": "100" });
  return 100;
});

gatewayScenario("a reserve/settle route (estimate 100, cost from a response header): 100 requests", async (request) => {
  const key = `k-${id()}`;
  for (let i = 0; i < 100; i++) await request("/llm/reserve-header/a", { "x-api-key": key });
  return 100;
});

gatewayScenario("a costed route of three measures (requests, input, output; no estimate): 100 requests", async (request) => {
  const key = `k-${id()}`;
  for (let i = 0; i < 100; i++) if ((await request("/llm/measures/a", { "x-api-key": key, "content-type": "application/json" })).status !== 200) throw new Error("a three-measure request was refused");
  return 100;
});

gatewayScenario("a reserve/settle route of three measures (requests, input, output; estimate 50 + 50): 100 requests", async (request) => {
  const key = `k-${id()}`;
  for (let i = 0; i < 100; i++) if ((await request("/llm/measures-estimate/a", { "x-api-key": key, "content-type": "application/json" })).status !== 200) throw new Error("a three-measure request was refused");
  return 100;
});

gatewayScenario("overrides in use (a config override and a runtime one): 100 requests", async (request) => {
  // The runtime override is set once, out of the count (an admin call), then read once per TTL.
  const key = `acme-${id()}`;
  const put = await request("/v1/overrides", { authorization: "Bearer bench-token", "content-type": "application/json" }, { method: "PUT", body: JSON.stringify({ policy: "plan", source: "header:x-api-key", key, limit: 2000 }) });
  if (put.status !== 200) throw new Error(`PUT /v1/overrides answered ${put.status}`);
  let admitted = 0;
  for (let i = 0; i < 100; i++) if ((await request("/plan/a", { "x-api-key": i % 2 === 0 ? key : `${key}-2` })).status === 200) admitted++;
  // The plan's own limit is 10 a second: every request admitted says both overrides applied.
  if (admitted !== 100) throw new Error(`overrides did not apply: ${admitted} of 100 admitted`);
  return 100;
});

it("/v1/check over a service binding: 200 checks, 100 keys", async ({ task }) => {
  const { tally } = freshTally();
  const rpc = exports.SpillwayRpc as unknown as { check(request: unknown): Promise<unknown> };
  const keys: string[] = [];
  for (let i = 0; i < 100; i++) keys.push(`svc-${id()}`);
  for (let round = 0; round < 2; round++) for (const key of keys) await rpc.check({ key, policy: "api" });
  // A service binding's call is no Worker request of its own: the caller's request pays.
  task.meta.cost = await settle("/v1/check over a service binding: 200 checks, 100 keys", 200, 0, tally, keys);
});
