// bench:gateway only: a Worker that proxies to ORIGIN_URL without limiting, with the same
// header handling as the gateway. The gap to gateway-worker.ts is what limiting costs.
import { clientResponse, globalFetchOrigin, originRequest, originUrlFor } from "../../src/gateway/proxy.js";

export default {
  async fetch(request: Request, env: { ORIGIN_URL: string }): Promise<Response> {
    const origin = new URL(env.ORIGIN_URL);
    const response = await globalFetchOrigin(originRequest(request, originUrlFor(origin, new URL(request.url))));
    return clientResponse(response, {});
  },
} satisfies ExportedHandler<{ ORIGIN_URL: string }>;
