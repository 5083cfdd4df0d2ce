// One Redis command over a fresh loopback connection, answered as `redis-cli` prints it when
// its output is not a terminal: the test harnesses' probes (PING, INFO, CLUSTER …, CONFIG SET)
// without a redis-cli process each. Starting one costs tens of milliseconds of CPU, and
// hundreds on a loaded 2-core machine: the launchers poll with dozens of them per server.
import { connect } from "node:net";

export interface RedisCommandOptions {
  /** Sent as AUTH first (its answer ignored, as `redis-cli -a` goes on after a failed AUTH). */
  password?: string;
  /** Gives up after this long: a stopped server (SIGSTOP) accepts the connection and never answers. */
  timeoutMs?: number;
}

function encode(args: string[]): string {
  return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join("")}`;
}

/** Parses one reply at `offset`: its text as redis-cli prints it and where it ends, or undefined if incomplete. */
function parse(buffer: Buffer, offset: number): { text: string; end: number } | undefined {
  const lineEnd = buffer.indexOf("\r\n", offset);
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(buffer[offset]!);
  const line = buffer.toString("utf8", offset + 1, lineEnd);
  // Simple strings, errors (printed, not thrown: redis-cli exits 0 on an error reply) and integers.
  if (type === "+" || type === "-" || type === ":") return { text: line, end: lineEnd + 2 };
  if (type === "$") {
    const length = Number(line);
    if (length < 0) return { text: "", end: lineEnd + 2 };
    if (buffer.length < lineEnd + 2 + length + 2) return undefined;
    return { text: buffer.toString("utf8", lineEnd + 2, lineEnd + 2 + length), end: lineEnd + 2 + length + 2 };
  }
  if (type === "*") {
    const count = Number(line);
    const items: string[] = [];
    let end = lineEnd + 2;
    for (let i = 0; i < count; i++) {
      const item = parse(buffer, end);
      if (!item) return undefined;
      items.push(item.text);
      end = item.end;
    }
    return { text: items.join("\n"), end };
  }
  throw new Error(`unexpected Redis reply type ${JSON.stringify(type)}`);
}

/** Sends `args` to the Redis (or Sentinel) on 127.0.0.1:`port`; answers the reply's text, trimmed. */
export function redisCommand(port: number, args: string[], options: RedisCommandOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const replies = options.password === undefined ? 1 : 2;
    let buffer = Buffer.alloc(0);
    let settled = false;
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => finish(new Error(`redis on port ${port} did not answer ${args[0]} within ${options.timeoutMs} ms`)), options.timeoutMs);
    function finish(error: Error | undefined, text?: string) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(text!.trim());
    }
    socket.once("error", (error) => finish(new Error(`could not reach redis on port ${port}: ${error.message}`)));
    socket.once("close", () => finish(new Error(`redis on port ${port} closed the connection before answering ${args[0]}`)));
    socket.on("data", (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      let offset = 0;
      let last: string | undefined;
      for (let i = 0; i < replies; i++) {
        const reply = parse(buffer, offset);
        if (!reply) return;
        offset = reply.end;
        last = reply.text;
      }
      finish(undefined, last);
    });
    socket.write((options.password === undefined ? "" : encode(["AUTH", options.password])) + encode(args));
  });
}
