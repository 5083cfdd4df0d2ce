import { inject } from "vitest";
import { GATEWAY_WS_CONFIG, type UpgradeReply, type WebSocketDriver, type WsClient } from "../conformance/gateway-websocket-table.js";
import type { GatewayReply } from "../conformance/gateway-table.js";
import { gatewayApp } from "./gateway-helpers.js";

// The Worker driver of the gateway table's WebSocket cases: the gateway decides in the real
// Durable Objects and reaches the real `ws` origin on loopback (started in Node by
// ws-origin-setup.ts) with workerd's own fetch; the client is workerd's WebSocket, the end of
// the 101 the gateway answers. workerd has no way to drop a connection without a close
// frame, so the client-abort case is Node's only (the origin's drop runs on both).

function replyOf(response: Response): GatewayReply {
  const body = response.body ? response.text() : Promise.resolve("");
  body.catch(() => {});
  return {
    status: response.status,
    header: (name) => response.headers.get(name),
    text: () => body,
    firstChunk: () => body,
    cancel: async () => {},
  };
}

function clientOf(ws: WebSocket): WsClient {
  const received: string[] = [];
  const waiting: ((text: string) => void)[] = [];
  ws.accept();
  ws.addEventListener("message", (event) => {
    const text = typeof event.data === "string" ? event.data : new TextDecoder().decode(event.data as ArrayBuffer);
    const next = waiting.shift();
    if (next) next(text);
    else received.push(text);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason })));
  return {
    send: (text) => ws.send(text),
    next: () => (received.length > 0 ? Promise.resolve(received.shift()!) : new Promise((resolve) => waiting.push(resolve))),
    close: (code, reason) => ws.close(code, reason),
    closed,
  };
}

export function workerWebSocketDriver(): WebSocketDriver {
  const originUrl = inject("wsOrigin");
  const gw = gatewayApp({ ...GATEWAY_WS_CONFIG, origin: originUrl }, { realOrigin: true });
  return {
    upgrade: async (path, { ip, headers = {}, protocol }): Promise<UpgradeReply> => {
      const fields: Record<string, string> = { ...headers, upgrade: "websocket" };
      if (protocol) fields["sec-websocket-protocol"] = protocol;
      const response = await gw.send(path, { ip, headers: fields });
      return { ...replyOf(response), socket: response.status === 101 && response.webSocket ? clientOf(response.webSocket) : undefined };
    },
    send: async (path, { ip, headers }) => replyOf(await gw.send(path, { ip, headers })),
    originHandshakes: async () => Number(await (await fetch(`${originUrl}/__handshakes`)).text()),
    limiter: gw.limiter,
  };
}
