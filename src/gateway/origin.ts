// The gateway's view of an origin: what it sends, what comes back, and who carries it
// (global fetch on Workers, a node:http client on Node).

/**
 * A request on its way to the origin. Not a Request: constructing one costs real time on
 * Node, and the Node origin client never needs one (nor the Headers object: it sends
 * `headerFields`, and `headers` is only built when read).
 */
export interface OriginRequest {
  url: string;
  method: string;
  /** Already without hop-by-hop fields and Host. */
  headers: Headers;
  /** The same fields as a record (lower-case names), which is all the Node origin client needs. */
  headerFields: Readonly<Record<string, string>>;
  /** The client's body stream, passed on as it arrives; null for GET and HEAD. */
  body: ReadableStream<Uint8Array> | null;
  /** Aborted when the client goes away or the origin timed out. */
  signal: AbortSignal;
  /**
   * originTimeoutMs: an origin client cuts the answer's body (erroring it with an
   * OriginTimeoutError) when no byte of it moves for this long. The wait for the headers is
   * the gateway's to time (OriginWait), whatever the client does.
   */
  timeoutMs: number;
}

/**
 * The origin's answer: a Response, or the same four parts as a plain object. A Response
 * fits this shape as it is; the Node origin client hands over a plain object because on
 * Node building Response and Headers objects (and reading them back) costs more than the
 * proxying itself.
 */
export interface OriginAnswer {
  status: number;
  statusText: string;
  /**
   * A record has lower-case names and repeated fields joined by ", " as Headers would join
   * them; it never stands for several Set-Cookie fields (those need a Headers).
   */
  headers: Headers | Readonly<Record<string, string>>;
  body: ReadableStream<Uint8Array> | null;
  /**
   * True when `body` holds the bytes as the origin encoded them (the Node origin client); a
   * fetch decodes them and keeps Content-Encoding. Read by the usage reader (answer-count.ts).
   */
  encodedBody?: boolean;
  /** workerd's fetch: the origin's WebSocket, after a 101 to an upgrade (gateway/websocket-relay.ts). */
  webSocket?: WebSocket | null;
}

/** Sends a request to the origin: global `fetch` on Workers, a node:http client on Node. */
export type FetchOrigin = (request: OriginRequest) => Promise<OriginAnswer>;
