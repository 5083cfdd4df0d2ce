import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { NAMESPACE_CONFIG, apiNamespaceConformance, keySourcesConformance } from "../conformance/api-namespace-table.js";
import { createWorker } from "../../src/worker/index.js";
import { gatewayApp } from "./gateway-helpers.js";

// The Worker (Durable Objects): /v1 keys and gateway route keys apart, and the sources
// /v1/credits and /v1/overrides may name (the table's cases).
const CONFIG = { ...NAMESPACE_CONFIG, origin: "https://origin.test" };
const gateway = gatewayApp(CONFIG);

const asJson = async (response: Response) => ({ status: response.status, body: (await response.json()) as Record<string, unknown> });
const init = (method: string, body: unknown): RequestInit => ({ method, headers: { authorization: "Bearer test-token", "content-type": "application/json" }, body: JSON.stringify(body) });

apiNamespaceConformance("Worker", () => ({
  api: async (path, body, method = "POST") => asJson(await gateway.send(path, init(method, body))),
  gateway: async (path, headers) => {
    const response = await gateway.send(path, { headers });
    await response.text();
    return response.status;
  },
  limiter: gateway.limiter,
}));

// The Worker as createWorker builds it: its runtime overrides live in the OVERRIDES object.
const worker = createWorker(CONFIG);
keySourcesConformance("Worker", () => ({
  api: async (path, body, method = "POST") => {
    const ctx = createExecutionContext();
    const response = await worker.fetch(new Request(`http://spillway.test${path}`, init(method, body)), env as never, ctx);
    await waitOnExecutionContext(ctx);
    return asJson(response);
  },
}));
