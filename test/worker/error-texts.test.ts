import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/hono.js";
import type { Env } from "../../src/worker/env.js";
import { createWorker } from "../../src/worker/index.js";
import { TOKEN } from "./helpers.js";

// What a newcomer's first requests to a Worker without an origin meet (issue 45, newcomer 6):
// GET / says where the API is, /dashboard says what serves it instead.

async function get(path: string): Promise<{ status: number; detail: string }> {
  const worker = createWorker({ policies: [{ name: "per-minute", limit: 10, period: "1m" }] }, { store: () => new MemoryStore() });
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(`http://spillway.test${path}`), { SPILLWAY_TOKEN: TOKEN } as Env as never, ctx);
  await waitOnExecutionContext(ctx);
  return { status: response.status, detail: ((await response.json()) as { detail: string }).detail };
}

describe("the Worker's 404s for a newcomer", () => {
  it("GET / points to POST /v1/check", async () => {
    expect(await get("/")).toEqual({
      status: 404,
      detail: 'no route for GET /: this is Spillway\'s API, not a page: ask with POST /v1/check {"key":"alice","policy":"NAME"} and Authorization: Bearer $SPILLWAY_TOKEN; GET /healthz needs no token (docs/http-api.md)',
    });
  });

  it("/dashboard and /metrics say they are spillway serve's", async () => {
    const why = "spillway serve's (Node); the Worker serves /v1/top and /v1/stats, and its metrics go to Analytics Engine (docs/observability.md)";
    expect(await get("/dashboard")).toEqual({ status: 404, detail: `/dashboard is not served here: /metrics and /dashboard are ${why}` });
    expect(await get("/metrics")).toEqual({ status: 404, detail: `/metrics is not served here: /metrics and /dashboard are ${why}` });
  });
});
