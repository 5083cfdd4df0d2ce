import type { Socket } from "node:net";
import type { Duplex } from "node:stream";

// The bytes of a proxied WebSocket on Node (upgrade-edge.ts): two TCP connections piped both
// ways, and how they end (docs/gateway.md, "WebSockets"). A relay must end whole: a socket
// left half-open holds its file descriptor and, through the edge, a concurrency lease.

/**
 * How long a relay stays half-closed: once one side has ended its half (a FIN, passed on to
 * the other), the other has this long to finish its close before both are cut. A WebSocket's
 * closing handshake takes a round trip; a peer that keeps its side open past that (a dead
 * client's FIN passed to an origin that ignores FIN) would otherwise hold both sockets, and a
 * concurrency lease, forever.
 */
export const HALF_CLOSE_GRACE_MS = 3000;

/**
 * Idle time before TCP keepalive probes a proxied WebSocket's peer (both sockets): a peer gone
 * without a FIN or a reset (power lost, a network cut) is found about 10 probes later, and
 * its socket, and lease, end.
 */
export const KEEPALIVE_IDLE_MS = 30_000;

/** Turns TCP keepalive on (a TLS socket passes it to its TCP socket; a socket of another kind has none). */
export function keepAlive(socket: Duplex): void {
  (socket as Socket).setKeepAlive?.(true, KEEPALIVE_IDLE_MS);
}

/**
 * Pipes `client` and `origin` both ways until either closes; then both are destroyed and
 * `ended` runs once. One side's FIN goes on to the other (pipe ends it); a side that has not
 * closed in turn within HALF_CLOSE_GRACE_MS is reset, with the other, so that neither
 * socket stays half-open (in CLOSE-WAIT here, or on a peer that ignores FIN).
 */
export function relaySockets(client: Duplex, origin: Duplex, ended: () => void): void {
  keepAlive(client);
  keepAlive(origin);
  let grace: NodeJS.Timeout | undefined;
  let done = false;
  const cut = () => {
    clearTimeout(grace);
    client.destroy();
    origin.destroy();
    if (done) return;
    done = true;
    ended();
  };
  const halfClosed = () => {
    grace ??= setTimeout(() => {
      reset(client);
      reset(origin);
      cut();
    }, HALF_CLOSE_GRACE_MS);
  };
  client.once("end", halfClosed);
  origin.once("end", halfClosed);
  client.once("close", cut);
  origin.once("close", cut);
  client.pipe(origin);
  origin.pipe(client);
}

/** Closes a socket with a TCP reset where it can (a plain TCP socket), else destroys it (a TLS one sends its FIN). */
function reset(socket: Duplex): void {
  if (socket.destroyed) return;
  try {
    (socket as Socket).resetAndDestroy();
  } catch {
    socket.destroy();
  }
}
