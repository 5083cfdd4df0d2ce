import type { Context } from "hono";

/**
 * The client address on Cloudflare: CF-Connecting-IP, which Cloudflare's edge sets (and
 * overwrites when a client sends its own), unlike X-Forwarded-For or True-Client-IP.
 */
export const cloudflareClientIp = (c: Context) => c.req.header("cf-connecting-ip");
