import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { STATE_ROW } from "../../src/worker/state-table.js";

export const TOKEN = "test-token";

/** POSTs JSON to the Worker under test with the test token. */
export function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return exports.default.fetch(`http://spillway.test${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...headers },
    // A stream goes as it is: a body of undeclared length.
    body: typeof body === "string" || body instanceof ReadableStream ? body : JSON.stringify(body),
  });
}

/** POSTs a /v1/check of `key` under `policy` to a Worker built by createWorker, with its own bindings. */
export async function checkWith(worker: { fetch(request: Request, env: never, ctx: ExecutionContext): Promise<Response> }, workerEnv: unknown, key: string, policy: string): Promise<Response> {
  const ctx = createExecutionContext();
  const request = new Request("http://spillway.test/v1/check", {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ key, policy }),
  });
  const response = await worker.fetch(request, workerEnv as never, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

let counter = 0;
/** A key no other test uses (Durable Object state outlives a test). */
export function uniqueKey(label = "key"): string {
  counter++;
  return `${label}-${counter}-${crypto.randomUUID()}`;
}

/** Policy states a LimiterObject holds in SQLite: in its one row (src/worker/state-table.ts); none once the object is idle. */
export function storedStates(stub: DurableObjectStub): Promise<number> {
  return runInDurableObject(stub, (_instance, state) => {
    const row = state.storage.kv.get<Record<string, unknown>>(STATE_ROW);
    return row ? Object.keys(row).length : 0;
  });
}
