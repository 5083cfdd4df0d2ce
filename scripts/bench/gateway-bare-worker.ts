// bench:gateway only: a Worker that proxies to ORIGIN_URL without limiting, with the same
// header handling as the gateway. The gap to gateway-worker.ts is what limiting costs.
import { DEFAULT_ORIGIN_TIMEOUT_MS } from "../../src/config-schema.js";
import { OriginWait } from "../../src/gateway/origin-timeout.js";
import { clientResponse, globalFetchOrigin, originRequest, originUrlFor } from "../../src/gateway/proxy.js";

export default {
  async fetch(request: Request, env: { ORIGIN_URL: string }): Promise<Response> {
    const origin = new URL(env.ORIGIN_URL);
    // Timed as the gateway times it: the gap stays what limiting costs.
    const wait = new OriginWait(request.signal, DEFAULT_ORIGIN_TIMEOUT_MS);
    const response = await wait.answer(globalFetchOrigin(originRequest(request, originUrlFor(origin, new URL(request.url)), wait)));
    return clientResponse(response, {});
  },
} satisfies ExportedHandler<{ ORIGIN_URL: string }>;
