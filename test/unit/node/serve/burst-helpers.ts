// Raw-socket burst clients (node:net): what an attacker or a load balancer's reconnect storm
// sends, not what a polite HTTP client does. Shared by test/unit/node/serve/burst*.test.ts (memory) and
// test/redis/burst*.test.ts (Redis).
import net from "node:net";

/** One HTTP/1.1 answer as read off the socket. */
export interface Answer {
  status: number;
  /** Lower-case names; repeated fields joined by ", ". */
  headers: Record<string, string>;
  body: string;
  /** From the write of its request to the answer's last byte. */
  latencyMs: number;
  /** The request it answers: its connection (0 when pipelined) and index on that connection. */
  connection: number;
  index: number;
}

/** A GET on the gateway, keyed by `x-k` (routes in these tests key by that header). */
export const gatewayGet = (key: string, path = "/burst") => `GET ${path} HTTP/1.1\r\nHost: t\r\nx-k: ${key}\r\n\r\n`;

/** A POST /v1/check with the test token. */
export function checkPost(body: Record<string, unknown>, token = "test-token"): string {
  const json = JSON.stringify(body);
  return `POST /v1/check HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
}

/**
 * Parses a stream of HTTP/1.1 answers (Content-Length or chunked bodies), as many as come.
 * Answers carry no request: on one connection they come in request order.
 */
class AnswerReader {
  #buffer = Buffer.alloc(0);

  /** Feeds bytes; returns the answers they completed (without latency). */
  push(chunk: Buffer): Parsed[] {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const done: Parsed[] = [];
    let offset = 0;
    for (;;) {
      const parsed = parseOne(this.#buffer, offset);
      if (!parsed) break;
      done.push(parsed.answer);
      offset = parsed.end;
    }
    this.#buffer = offset === this.#buffer.length ? Buffer.alloc(0) : this.#buffer.subarray(offset);
    return done;
  }
}

type Parsed = Omit<Answer, "latencyMs" | "connection" | "index">;

function parseOne(buffer: Buffer, start: number): { answer: Parsed; end: number } | undefined {
  const headEnd = buffer.indexOf("\r\n\r\n", start, "latin1");
  if (headEnd < 0) return undefined;
  const [statusLine, ...lines] = buffer.toString("latin1", start, headEnd).split("\r\n");
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine!)?.[1]);
  if (!status) throw new Error(`not an HTTP/1.1 answer: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  let at = headEnd + 4;
  if (headers["transfer-encoding"]?.includes("chunked")) {
    const parts: Buffer[] = [];
    for (;;) {
      const sizeEnd = buffer.indexOf("\r\n", at, "latin1");
      if (sizeEnd < 0) return undefined;
      const size = Number.parseInt(buffer.toString("latin1", at, sizeEnd), 16);
      if (buffer.length < sizeEnd + 2 + size + 2) return undefined;
      parts.push(buffer.subarray(sizeEnd + 2, sizeEnd + 2 + size));
      at = sizeEnd + 2 + size + 2;
      if (size === 0) break;
    }
    return { answer: { status, headers, body: Buffer.concat(parts).toString("utf8") }, end: at };
  }
  const length = Number(headers["content-length"] ?? 0);
  if (buffer.length < at + length) return undefined;
  return { answer: { status, headers, body: buffer.toString("utf8", at, at + length) }, end: at + length };
}

/** Loopback source addresses for many connections: 127.0.0.1 … 127.0.0.N (Linux routes all of 127/8 to lo). */
export function loopbackAddress(index: number, count = 8): string {
  return `127.0.0.${1 + (index % count)}`;
}

function connect(port: number, localAddress: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress });
    socket.once("connect", () => {
      socket.off("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

/**
 * One connection, every request in one write (pipelined): the server parses them all in one
 * go, as it would a flood from one client. Resolves with the answers, in order.
 */
export async function pipelinedBurst(port: number, requests: readonly string[], timeoutMs = 60_000): Promise<Answer[]> {
  const socket = await connect(port, "127.0.0.1");
  const reader = new AnswerReader();
  const answers: Answer[] = [];
  try {
    return await new Promise<Answer[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`pipelined burst: ${answers.length} of ${requests.length} answers within ${timeoutMs} ms`)), timeoutMs);
      const sentMs = performance.now();
      socket.on("data", (chunk: Buffer) => {
        for (const answer of reader.push(chunk)) answers.push({ ...answer, latencyMs: performance.now() - sentMs, connection: 0, index: answers.length });
        if (answers.length >= requests.length) {
          clearTimeout(timer);
          resolve(answers);
        }
      });
      socket.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      socket.write(requests.join(""));
    });
  } finally {
    socket.destroy();
  }
}

export interface ConnectionBurstOptions {
  port: number;
  connections: number;
  /** Requests each connection sends, one after the other's answer (keep-alive). */
  requestsPerConnection: number;
  /** The request text for connection `connection`'s `index`th request. */
  request: (connection: number, index: number) => string;
  /** Source addresses spread over 127.0.0.1 … 127.0.0.N (default 8). */
  addresses?: number;
  timeoutMs?: number;
}

/**
 * Many keep-alive connections: all opened first (in batches, within the listen backlog), then
 * every first request written in one loop (the burst), each later request as soon as its
 * connection's previous answer came. Resolves with every answer (with its latency) and the
 * source address of each connection.
 */
export async function connectionBurst(options: ConnectionBurstOptions): Promise<{ answers: Answer[]; addressOf: (connection: number) => string }> {
  const { port, connections, requestsPerConnection, request } = options;
  const addresses = options.addresses ?? 8;
  const sockets: net.Socket[] = [];
  try {
    for (let first = 0; first < connections; first += 250) {
      const batch = Array.from({ length: Math.min(250, connections - first) }, (_, i) => connect(port, loopbackAddress(first + i, addresses)));
      sockets.push(...(await Promise.all(batch)));
    }
    const answers: Answer[] = [];
    const total = connections * requestsPerConnection;
    await new Promise<void>((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? 60_000;
      const timer = setTimeout(() => reject(new Error(`connection burst: ${answers.length} of ${total} answers within ${timeoutMs} ms`)), timeoutMs);
      const fail = (error: Error) => {
        clearTimeout(timer);
        reject(error);
      };
      const firstRequests = sockets.map((socket, connection) => {
        const reader = new AnswerReader();
        let sent = 0;
        let received = 0;
        let sentMs = 0;
        const send = () => {
          sentMs = performance.now();
          socket.write(request(connection, sent++));
        };
        socket.on("data", (chunk: Buffer) => {
          for (const answer of reader.push(chunk)) {
            answers.push({ ...answer, latencyMs: performance.now() - sentMs, connection, index: received++ });
            if (sent < requestsPerConnection) send();
          }
          if (answers.length === total) {
            clearTimeout(timer);
            resolve();
          }
        });
        socket.once("error", fail);
        socket.once("close", () => {
          if (received < requestsPerConnection) fail(new Error(`connection ${connection} closed after ${received} of ${requestsPerConnection} answers`));
        });
        return send;
      });
      // The burst: every connection's first request in one loop.
      for (const send of firstRequests) send();
    });
    return { answers, addressOf: (connection) => loopbackAddress(connection, addresses) };
  } finally {
    for (const socket of sockets) socket.destroy();
  }
}

/** The `p`th percentile (0 … 100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Answers by status: `{ 200: 5, 429: 4995 }`. */
export function statusCounts(answers: readonly Answer[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const answer of answers) counts[answer.status] = (counts[answer.status] ?? 0) + 1;
  return counts;
}
