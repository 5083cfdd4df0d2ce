import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import type { SpillwayConfig } from "../config.js";
import { createApp } from "../http/app.js";
import type { Limiter } from "../limiter.js";
import { SpillwayService } from "../service.js";

export interface ServerOptions {
  config: SpillwayConfig;
  limiter: Limiter;
  /** 0 picks a free port. */
  port: number;
  /** Default 127.0.0.1; set 0.0.0.0 to listen on every interface. */
  hostname?: string;
  /** The /v1 bearer token (default: SPILLWAY_TOKEN from the environment, read per request). */
  token?: string;
  /** The gateway app, mounted after /v1 and /healthz. */
  fallback?: Hono;
  /** How long close() lets in-flight requests finish before cutting them (default 10 s). */
  drainTimeoutMs?: number;
}

export interface RunningServer {
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests finish, closes connections and the store. */
  close(): Promise<void>;
}

/**
 * Serves the Spillway app on Node with @hono/node-server.
 *
 * @example const server = await startServer({ config, limiter: new MemoryStore(), port: 8787 });
 */
export function startServer(options: ServerOptions): Promise<RunningServer> {
  const service = new SpillwayService(options.limiter, options.config);
  const tokenOf = () => options.token ?? process.env.SPILLWAY_TOKEN;
  const app = createApp({ service, tokenOf, fallback: options.fallback });
  const hostname = options.hostname ?? "127.0.0.1";
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: options.port, hostname }, (info: AddressInfo) => {
      const host = hostname.includes(":") ? `[${hostname}]` : hostname;
      resolve({ port: info.port, url: `http://${host}:${info.port}`, close: () => closeServer(server, options) });
    });
    server.once("error", reject);
  });
}

type NodeServer = ReturnType<typeof serve>;

async function closeServer(server: NodeServer, options: ServerOptions): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // Idle keep-alive sockets would hold close() open forever; busy ones finish their request.
  (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
  const timer = setTimeout(() => (server as { closeAllConnections?: () => void }).closeAllConnections?.(), options.drainTimeoutMs ?? 10_000);
  await closed;
  clearTimeout(timer);
  await options.limiter.close?.();
}
