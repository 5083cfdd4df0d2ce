import { problem, problemResponse } from "../http/problems.js";
import type { HeaderLookup } from "./keys.js";

// WebSocket upgrades through the gateway (docs/gateway.md, "WebSockets"): the rules both edges
// share. An upgrade is decided like any request of its route (its rate policies count it once;
// a concurrency policy's lease is held for the life of the socket); only how the bytes move
// differs: node/http/upgrade-edge.ts pipes raw sockets, websocket-relay.ts relays messages in workerd.

/**
 * Whether a request asks to become a WebSocket (RFC 6455 §4.1: a GET with `Upgrade: websocket`).
 * Other protocols' upgrades (h2c) are not proxied: their request goes to the origin as a plain
 * one, `Upgrade` removed as a hop-by-hop field.
 */
export function isWebSocketUpgrade(method: string, headers: HeaderLookup): boolean {
  if (method !== "GET") return false;
  const upgrade = headers.get("upgrade");
  return upgrade !== null && upgrade.split(",").some((token) => token.trim().toLowerCase() === "websocket");
}

/**
 * Fields a runtime's own WebSocket client writes for each hop of its handshake (workerd's
 * fetch): the client's would contradict them (a key the origin's accept does not answer, an
 * extension this hop did not negotiate). Node pipes the client's handshake through unchanged.
 */
const PER_HOP_HANDSHAKE_FIELDS = ["sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-accept"] as const;

/**
 * The forwarded fields of an upgrade (the client's end-to-end fields, `fields`, changed in
 * place): `Upgrade` and `Connection` are hop-by-hop, so they are stripped from every request,
 * and put back here for upgrades only. `perHop` drops what the runtime's client writes itself.
 */
export function asWebSocketUpgrade(fields: Record<string, string>, perHop: boolean): Record<string, string> {
  fields.connection = "upgrade";
  fields.upgrade = "websocket";
  if (perHop) for (const name of PER_HOP_HANDSHAKE_FIELDS) delete fields[name];
  return fields;
}

/** The origin's 101 fields worth passing to the client across a relay: the subprotocol it chose. */
export const RELAYED_HANDSHAKE_FIELDS = ["sec-websocket-protocol"] as const;

/**
 * Whether an origin's status cannot be relayed as an answer: informational ones (a 101 to a
 * request that did not ask to upgrade, above all) and anything outside 1xx–5xx.
 */
export const isUnrelayableStatus = (status: number): boolean => status < 200 || status > 599;

/**
 * The 502 for an origin that answered with a status a client cannot be given: a `101
 * Switching Protocols` that nobody asked for (it would leave the client waiting on a protocol
 * it never spoke), or a status outside 1xx–5xx.
 */
export function unrelayableStatus(origin: URL, status: number): Response {
  const why = status === 101 ? "101 Switching Protocols to a request that did not ask to upgrade" : `status ${status}, which cannot be relayed`;
  return problemResponse(problem(502, `the origin ${origin.host} answered with ${why}`));
}

/** What an origin client fails with when the origin's status cannot be relayed (badGateway answers unrelayableStatus). */
export class UnrelayableStatusError extends Error {
  readonly status: number;
  constructor(status: number) {
    super(`the origin answered with status ${status}`);
    this.name = "UnrelayableStatusError";
    this.status = status;
  }
}
