import { env } from "cloudflare:workers";
import { parseConfig } from "../../src/config/config.js";
import { createGateway } from "../../src/gateway/gateway.js";
import type { LogFn } from "../../src/http/limit.js";
import { cloudflareClientIp } from "../../src/worker/client-ip.js";
import { createApp } from "../../src/http/app.js";
import { SpillwayService } from "../../src/service/service.js";
import { DurableObjectStore } from "../../src/stores/durable-object.js";

export type OriginHandler = (request: Request) => Response | Promise<Response>;

/**
 * The Spillway app with a gateway for `raw`, deciding in the real Durable Objects of the
 * Worker under test, in front of an origin Worker stand-in (`origin.handler`, swappable per
 * test) reached through the gateway's fetchOrigin; with `realOrigin`, the config's origin itself,
 * through workerd's global fetch (the WebSocket cases' loopback origin).
 */
export function gatewayApp(raw: Record<string, unknown>, { realOrigin = false, readOnCapMs }: { realOrigin?: boolean; readOnCapMs?: number } = {}) {
  const config = parseConfig(raw);
  const limiter = new DurableObjectStore(env.LIMITER);
  const logs: Record<string, unknown>[] = [];
  const log: LogFn = (entry) => logs.push(entry);
  const origin: { handler: OriginHandler; hits: number } = { handler: () => new Response("ok"), hits: 0 };
  const fallback = createGateway({
    config,
    limiter,
    clientIpOf: cloudflareClientIp,
    log,
    readOnCapMs,
    fetchOrigin: realOrigin
      ? undefined
      : async ({ url, method, headers, body, signal }) => {
          origin.hits++;
          return origin.handler(new Request(url, { method, headers, body, signal, duplex: body ? "half" : undefined } as RequestInit));
        },
  });
  const app = createApp({ service: new SpillwayService(limiter, config), tokenOf: () => "test-token", fallback });
  const send = (path: string, init: RequestInit & { ip?: string } = {}) => {
    const headers = new Headers(init.headers);
    if (init.ip) headers.set("cf-connecting-ip", init.ip);
    return app.fetch(new Request(`https://gateway.test${path}`, { ...init, headers }), env);
  };
  return { app, limiter, logs, origin, send };
}

let counter = 0;
/** An IPv4 address no other test uses (Durable Object state outlives a test). */
export function uniqueIp(): string {
  const [a, b, c] = crypto.getRandomValues(new Uint8Array(3));
  return `10.${a}.${b}.${c}`;
}

export function uniqueUser(): string {
  counter++;
  return `user-${counter}-${crypto.randomUUID()}`;
}

/** A promise with its resolve function, for lock-step streaming tests. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
