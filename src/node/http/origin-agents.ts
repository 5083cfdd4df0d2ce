import http from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";

/**
 * How long a pooled origin connection may sit unused before the gateway closes it: under the
 * idle timeouts origins commonly close at (Node's http server: keepAliveTimeout 5 s), so that
 * the gateway, not the origin, ends an idle connection, and no request goes out on a
 * connection the origin is closing at that very moment.
 */
export const ORIGIN_IDLE_TIMEOUT_MS = 4000;

/**
 * The keep-alive connection pools to origins, one per scheme (an Agent pools per host and
 * port inside). Made once per server and shared by every runtime a reload builds: a reload
 * neither drops the warm connections to the origin nor leaves an old pool's sockets open.
 */
export interface OriginAgents {
  readonly "http:": http.Agent;
  readonly "https:": https.Agent;
}

export interface OriginAgentOptions {
  /** Connections per origin host at most. @default 256 */
  maxSockets?: number;
  /** How long a pooled connection may sit unused before it is closed, in ms (0: until the origin closes it). @default ORIGIN_IDLE_TIMEOUT_MS */
  idleTimeoutMs?: number;
}

/** @example const agents = originAgents({ idleTimeoutMs: 2000 }); createNodeGateway({ config, limiter, agents }) */
export function originAgents(options: OriginAgentOptions = {}): OriginAgents {
  const pool: http.AgentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 256 };
  const idleTimeoutMs = options.idleTimeoutMs ?? ORIGIN_IDLE_TIMEOUT_MS;
  const agents = { "http:": new OriginHttpAgent(pool), "https:": new OriginHttpsAgent(pool) };
  agents["http:"].idleTimeoutMs = agents["https:"].idleTimeoutMs = idleTimeoutMs;
  return agents;
}

/**
 * Node's Agent closes a free socket whose timeout fires (its own 'timeout' listener), but its
 * `timeout` option would also arm that timeout on every new connection while its first request
 * is in flight. So the pool's idle timeout is set here, only as a socket goes free, and cleared
 * as it is reused: in flight the request's own clocks (originTimeoutMs) are the only ones.
 * A mixin: the same pool over plain TCP and over TLS (https.Agent extends http.Agent).
 */
// `any[]`: TypeScript accepts a mixin only over a constructor of any arguments.
function idleClosing<Base extends new (...args: any[]) => http.Agent>(Agent: Base) {
  return class extends Agent {
    idleTimeoutMs = ORIGIN_IDLE_TIMEOUT_MS;
    override keepSocketAlive(socket: Duplex): boolean {
      return (super.keepSocketAlive(socket) as unknown) !== false && keptIdle(socket as Socket, this.idleTimeoutMs);
    }
    override reuseSocket(socket: Duplex, request: http.ClientRequest): void {
      super.reuseSocket(socket, request);
      taken(socket as PooledSocket);
    }
  };
}

const OriginHttpAgent = idleClosing(http.Agent);
const OriginHttpsAgent = idleClosing(https.Agent);

/**
 * Arms a socket's idle timeout as it goes free; false (close it now) when the origin's
 * Keep-Alive hint leaves no safe time. An origin announcing `Keep-Alive: timeout=N` gets its
 * connections closed a second before N, as Node's own agent and undici do.
 */
function keptIdle(socket: Socket, idleTimeoutMs: number): boolean {
  let timeoutMs = idleTimeoutMs;
  const hint = (socket as { _httpMessage?: { res?: http.IncomingMessage } })._httpMessage?.res?.headers["keep-alive"];
  if (typeof hint === "string") {
    const seconds = /^\s*timeout=(\d+)/i.exec(hint)?.[1];
    if (seconds !== undefined) {
      const hintedMs = Number(seconds) * 1000 - 1000;
      if (hintedMs <= 0) return false;
      timeoutMs = Math.min(timeoutMs, hintedMs);
    }
  }
  if (timeoutMs > 0) socket.setTimeout(timeoutMs);
  return true;
}

/** Whether any byte came on a pooled socket since its current request took it. */
const answerBegan = Symbol("answerBegan");
type PooledSocket = Socket & { [answerBegan]?: boolean };

function markAnswerBegan(this: PooledSocket): void {
  this[answerBegan] = true;
}

/** A free socket taken by a request: its idle timeout stops, and the request's answer is watched for. */
function taken(socket: PooledSocket): void {
  socket.setTimeout(0);
  // One listener for the socket's life (not one per request): it only flips a flag.
  if (socket[answerBegan] === undefined) socket.on("data", markAnswerBegan);
  socket[answerBegan] = false;
}

/** The methods a request may be sent again for (idempotent), when it has no body to resend. */
export const RETRIABLE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Whether a failed origin request lost the race with the origin closing an idle pooled
 * connection: it went out on a reused socket, which was reset or closed (ECONNRESET, "socket
 * hang up", EPIPE) before any byte of the answer came. An idempotent request without a body
 * may then go again, once, on a new connection (RFC 9110, 9.2.2): the caller checks the method
 * and the body, and retries only its first attempt, never after a timeout.
 */
export function lostIdleRace(outgoing: http.ClientRequest, error: unknown): boolean {
  if (!outgoing.reusedSocket) return false;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code !== "ECONNRESET" && code !== "EPIPE") return false;
  return (outgoing.socket as PooledSocket | null)?.[answerBegan] === false;
}
