import type { HeldLease } from "../http/limit.js";
import type { OriginAnswer } from "./origin.js";
import { RELAYED_HANDSHAKE_FIELDS } from "./upgrade.js";

// The Worker's WebSocket proxy (workerd). fetch() hands the gateway the origin's socket after
// its 101; returning that socket to the client as it is would proxy it, but the gateway would
// never learn when it closes, and a concurrency lease must last exactly as long as the socket.
// So the client gets one end of a WebSocketPair, and the gateway relays messages between the
// other end and the origin's socket, seeing every close and error on either side.

/** Whether this runtime can relay WebSockets (workerd has WebSocketPair; Node's edge pipes sockets instead). */
export const canRelayWebSockets = (): boolean => typeof (globalThis as { WebSocketPair?: unknown }).WebSocketPair === "function";

/**
 * The client's 101, with the subprotocol the origin chose and `extra` (the RateLimit fields).
 * With a lease, the client gets one end of a relay to `originSocket` (the origin already
 * accepted the upgrade): the lease is released when either side closes or fails, `defer` keeps
 * the relay alive until then (a Worker's waitUntil), and the lease's own timer extends it
 * meanwhile. Without one there is nothing to watch: the origin's socket is handed over as it
 * is, and workerd joins the two connections without running the Worker for each message.
 */
export function switchWebSocket(origin: OriginAnswer, originSocket: WebSocket, extra: Record<string, string>, lease: HeldLease | undefined, defer: (promise: Promise<unknown>) => void): Response {
  const headers = new Headers(extra);
  for (const name of RELAYED_HANDSHAKE_FIELDS) {
    const value = origin.headers instanceof Headers ? origin.headers.get(name) : origin.headers[name];
    if (value) headers.set(name, value);
  }
  if (!lease) return new Response(null, { status: 101, webSocket: originSocket, headers });
  const { client, closed } = relayWebSocket(originSocket);
  defer(closed.then(() => lease.release()));
  return new Response(null, { status: 101, webSocket: client, headers });
}

/**
 * Relays messages both ways between a new pair's server end and `originSocket`; a close
 * (code and reason) or an error on one side closes the other. `closed` resolves at the first
 * of them: from then on nothing more is relayed.
 */
export function relayWebSocket(originSocket: WebSocket): { client: WebSocket; closed: Promise<void> } {
  const pair = new WebSocketPair();
  const client = pair[0];
  const server = pair[1];
  server.accept();
  originSocket.accept();
  let finish!: () => void;
  const closed = new Promise<void>((resolve) => (finish = resolve));
  const link = (from: WebSocket, to: WebSocket) => {
    from.addEventListener("message", (event) => {
      try {
        to.send(event.data);
      } catch {
        // The other side is closing: its close event ends the relay.
      }
    });
    from.addEventListener("close", (event) => {
      closeQuietly(to, event.code, event.reason);
      finish();
    });
    from.addEventListener("error", () => {
      closeQuietly(to, 1011, "the other side of the proxied WebSocket failed");
      finish();
    });
  };
  link(server, originSocket);
  link(originSocket, server);
  return { client, closed };
}

/**
 * Closes `socket` with the code the other side closed with, where a code may be sent (RFC 6455
 * §7.4: 1005, 1006 and 1015 only describe a close, they are never sent); an abnormal close
 * (1006: the connection dropped) is passed on as 1001, going away.
 */
function closeQuietly(socket: WebSocket, code: number, reason: string): void {
  const sendable = code === 1000 || (code >= 1001 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
  try {
    if (sendable) socket.close(code, reason);
    else if (code === 1005) socket.close(1000);
    else socket.close(1001, "the other side of the proxied WebSocket went away");
  } catch {
    // Already closed or closing.
  }
}
