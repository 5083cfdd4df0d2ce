import { apiNamespaceConformance, NAMESPACE_CONFIG } from "../conformance/api-namespace-table.js";
import { gatewayApp } from "./gateway-helpers.js";

// The Worker (Durable Objects): /v1 keys and gateway route keys apart (the table's cases).
const worker = gatewayApp({ ...NAMESPACE_CONFIG, origin: "https://origin.test" });

apiNamespaceConformance("Worker", () => ({
  api: async (path, body) => {
    const response = await worker.send(path, { method: "POST", headers: { authorization: "Bearer test-token", "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  },
  gateway: async (path, headers) => {
    const response = await worker.send(path, { headers });
    await response.text();
    return response.status;
  },
  limiter: worker.limiter,
}));
