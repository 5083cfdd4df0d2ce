// bench:gateway only: the Node baseline, a proxy with nothing but proxying. Same server
// (@hono/node-server), same origin client and header handling as the gateway, no routes,
// no keys, no limiter: the gap to `spillway serve` is what limiting costs.
// usage: tsx scripts/bench/gateway-bare-proxy.ts PORT ORIGIN_URL
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { createNodeOriginFetch } from "../../src/node/gateway.js";
import { DEFAULT_ORIGIN_TIMEOUT_MS } from "../../src/config-schema.js";
import { OriginWait } from "../../src/gateway/origin-timeout.js";
import { clientResponse, originRequest, originUrlFor } from "../../src/gateway/proxy.js";

const [port = "8791", originText = "http://127.0.0.1:8790"] = process.argv.slice(2);
const origin = new URL(originText);
const fetchOrigin = createNodeOriginFetch();
const app = new Hono();
app.all("*", async (c) => {
  const request = c.req.raw;
  // Timed as the gateway times it: the gap stays what limiting costs.
  const wait = new OriginWait(request.signal, DEFAULT_ORIGIN_TIMEOUT_MS);
  const response = await wait.answer(fetchOrigin(originRequest(request, originUrlFor(origin, new URL(request.url)), wait)));
  return clientResponse(response, {});
});
serve({ fetch: app.fetch, port: Number(port), hostname: "127.0.0.1" }, () => console.log(`bare proxy on ${port}`));
