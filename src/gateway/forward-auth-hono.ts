import type { Context, Hono } from "hono";
import { deferOf } from "../http/limit.js";
import { rawPathOf } from "../http/path.js";
import { errorResponse } from "../http/problems.js";
import type { GatewayCore } from "./core.js";
import { FORWARD_AUTH_PATH, ForwardAuth } from "./forward-auth.js";
import { ENVOY_FORWARD_AUTH_PREFIX, answerEnvoyHttp } from "./forward-auth-envoy.js";
import type { HeaderLookup } from "./keys.js";

/**
 * `/v1/forward-auth` and Envoy's `/v1/forward-auth/envoy/…` on the Hono gateway: what the
 * Worker serves (docs/proxies.md, "On a Worker"). The proxy's address is `clientIpOf`'s, on
 * Cloudflare CF-Connecting-IP (the address that reached Cloudflare, which it overwrites
 * whatever a client sends): that must be in trustProxy, and X-Forwarded-For is walked from it.
 * On Node the server's dispatch answers these paths before the Hono app sees them.
 */
export function mountForwardAuth(app: Hono, core: GatewayCore, clientIpOf: (c: Context) => string | undefined, fieldRepeated?: (c: Context, lowerName: string) => boolean): void {
  const auth = new ForwardAuth(core);
  const headersOf = (c: Context): HeaderLookup => {
    const headers = c.req.raw.headers;
    return fieldRepeated ? { get: (name) => headers.get(name), repeated: (name) => fieldRepeated(c, name) } : headers;
  };
  app.all(FORWARD_AUTH_PATH, (c) =>
    auth.answer({ headers: headersOf(c), socketIp: clientIpOf(c), searchParams: new URL(c.req.url).searchParams, signal: () => c.req.raw.signal, defer: deferOf(c) }).catch(errorResponse),
  );
  const envoy = (c: Context) => {
    const url = new URL(c.req.url);
    return answerEnvoyHttp(auth, { method: c.req.method, target: `${rawPathOf(c.req.url)}${url.search}`, headers: headersOf(c), socketIp: clientIpOf(c), signal: () => c.req.raw.signal, defer: deferOf(c) }).catch(errorResponse);
  };
  app.all(ENVOY_FORWARD_AUTH_PREFIX, envoy);
  app.all(`${ENVOY_FORWARD_AUTH_PREFIX}/*`, envoy);
}
