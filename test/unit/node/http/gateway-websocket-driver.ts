import http from "node:http";
import WebSocket from "ws";
import type { Limiter } from "../../../../src/core/limiter.js";
import type { GatewayReply } from "../../../conformance/gateway-table.js";
import type { UpgradeReply, WebSocketDriver, WsClient } from "../../../conformance/gateway-websocket-table.js";
import type { WsOrigin } from "../../../conformance/ws-origin.js";

// The Node driver of the gateway table's WebSocket cases: a real `ws` client through
// `spillway serve` on loopback to the real `ws` origin. As in the rest of the Node table, the
// client speaks as a trusted proxy on loopback forwarding for the case's address.

const forwardedFor = (ip: string, headers: Record<string, string>) => (headers["x-forwarded-for"] ? `${headers["x-forwarded-for"]}, ${ip}` : ip);

function bodyOf(incoming: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => resolve(Buffer.concat(chunks).toString()));
    incoming.on("error", reject);
  });
}

function replyOf(incoming: http.IncomingMessage, cancel: () => void): GatewayReply {
  const body = bodyOf(incoming);
  body.catch(() => {});
  return {
    status: incoming.statusCode ?? 0,
    header: (name) => {
      const value = incoming.headers[name.toLowerCase()];
      return value === undefined ? null : String(value);
    },
    text: () => body,
    firstChunk: () => body,
    cancel: async () => cancel(),
  };
}

function clientOf(ws: WebSocket): WsClient {
  const received: string[] = [];
  const waiting: ((text: string) => void)[] = [];
  ws.on("message", (data) => {
    const text = data.toString();
    const next = waiting.shift();
    if (next) next(text);
    else received.push(text);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })));
  return {
    send: (text) => ws.send(text),
    next: () => (received.length > 0 ? Promise.resolve(received.shift()!) : new Promise((resolve) => waiting.push(resolve))),
    close: (code, reason) => ws.close(code, reason),
    closed,
    abort: () => ws.terminate(),
  };
}

export function nodeWebSocketDriver(gatewayPort: () => number, origin: () => WsOrigin, limiter: Limiter): WebSocketDriver {
  return {
    upgrade: (path, { ip, headers = {}, protocol }) =>
      new Promise<UpgradeReply>((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${gatewayPort()}${path}`, protocol ? [protocol] : [], { headers: { ...headers, "x-forwarded-for": forwardedFor(ip, headers) } });
        ws.on("error", () => {}); // a refused upgrade ends in 'unexpected-response'; a drop in 'close'
        let switched: http.IncomingMessage | undefined;
        ws.once("upgrade", (incoming) => (switched = incoming));
        ws.once("open", () => resolve({ ...replyOf(switched!, () => ws.terminate()), socket: clientOf(ws) }));
        ws.once("unexpected-response", (request, incoming) => resolve({ ...replyOf(incoming, () => request.destroy()), socket: undefined }));
        setTimeout(() => reject(new Error(`no answer to the upgrade of ${path}`)), 20_000).unref();
      }),
    send: (path, { ip, headers = {} }) =>
      new Promise<GatewayReply>((resolve, reject) => {
        const outgoing = http.request(`http://127.0.0.1:${gatewayPort()}${path}`, { agent: false, headers: { ...headers, "x-forwarded-for": forwardedFor(ip, headers) } }, (incoming) =>
          resolve(replyOf(incoming, () => outgoing.destroy())),
        );
        outgoing.on("error", reject);
        outgoing.end();
      }),
    originHandshakes: () => origin().handshakes(),
    limiter,
  };
}
