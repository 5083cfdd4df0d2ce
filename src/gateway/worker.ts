import type { Context, Hono } from "hono";
import { config } from "../worker/service.js";
import type { Env } from "../worker/env.js";
import { serviceFor } from "../worker/service.js";
import { parseGatewayConfig } from "./config.js";
import { createGateway } from "./gateway.js";

/** The bundled config's gateway part, validated when the Worker loads: a bad one fails the deploy. */
export const gatewayConfig = parseGatewayConfig(config);

/**
 * The client address on Cloudflare: CF-Connecting-IP, which Cloudflare's edge sets (and
 * overwrites when a client sends its own), unlike X-Forwarded-For or True-Client-IP.
 */
export const cloudflareClientIp = (c: Context) => c.req.header("cf-connecting-ip");

const gateways = new WeakMap<object, Hono>();

/**
 * The gateway for this Worker (undefined when the config has no `origin`), one per
 * LIMITER binding, deciding through the same Durable Object store as /v1.
 *
 * @example createApp({ service: serviceFor(env), tokenOf, fallback: gatewayFor(env) })
 */
export function gatewayFor(env: Env): Hono | undefined {
  if (!gatewayConfig) return undefined;
  let gateway = gateways.get(env.LIMITER);
  if (!gateway) {
    gateway = createGateway({ config, gateway: gatewayConfig, limiter: serviceFor(env).limiter, clientIpOf: cloudflareClientIp });
    gateways.set(env.LIMITER, gateway);
  }
  return gateway;
}
