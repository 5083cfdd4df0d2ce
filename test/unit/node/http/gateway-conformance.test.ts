import http from "node:http";
import { afterAll, beforeAll } from "vitest";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { GATEWAY_TABLE_CONFIG, type CountingOrigin, type GatewayDriver, type GatewayReply, gatewayConformance } from "../../../conformance/gateway-table.js";
import { gatewayCountingConformance } from "../../../conformance/gateway-counting-table.js";
import { gatewayAccessConformance } from "../../../conformance/gateway-table-access.js";
import { gatewayRepeatsConformance } from "../../../conformance/gateway-table-repeats.js";
import { gatewayPlansConformance } from "../../../conformance/gateway-table-plans.js";
import { GATEWAY_WS_CONFIG, gatewayWebSocketConformance } from "../../../conformance/gateway-websocket-table.js";
import { type WsOrigin, startWsOrigin } from "../../../conformance/ws-origin.js";
import { type GatewayUnderTest, type Running, ownStore, startGateway, startGatewayToClosedOrigin, startOrigin } from "./gateway-helpers.js";
import { nodeWebSocketDriver } from "./gateway-websocket-driver.js";

// The gateway conformance table on `spillway serve`'s Node gateway, in front of a real loopback
// origin. Node keys `ip` by the socket address, and a test cannot open sockets from 203.0.113.5:
// the driver speaks as a trusted proxy on loopback that forwards for the case's address (keying
// by the socket itself is a Node-only case, in node/http/gateway-limits.test.ts).
const config = { ...GATEWAY_TABLE_CONFIG, trustProxy: [...GATEWAY_TABLE_CONFIG.trustProxy, "127.0.0.1"] };
const limiter = new MemoryStore();
let origin: Running & { server: http.Server };
/**
 * The table runs twice: on the memory store, whose requests the Node edge decides together at
 * the end of each turn of the event loop, and on a store of the caller's own (here delegating
 * to the same memory store), whose requests it decides as they come, as it does Redis's.
 */
const gateways: Record<"turnEnd" | "atOnce", { up?: GatewayUnderTest; down?: GatewayUnderTest }> = { turnEnd: {}, atOnce: {} };
let originDown = false;
let hits = 0;
let handler: http.RequestListener = (_req, res) => res.end("ok");
const agent = new http.Agent({ keepAlive: true });
/** The WebSocket cases: their own gateway and store, in front of a real `ws` origin. */
const wsLimiter = new MemoryStore();
let wsOrigin: WsOrigin;
let wsGateway: GatewayUnderTest;

beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    hits++;
    handler(req, res);
  });
  const own = ownStore(limiter);
  gateways.turnEnd = { up: await startGateway({ ...config, origin: origin.url }, limiter), down: await startGatewayToClosedOrigin(config, limiter) };
  gateways.atOnce = { up: await startGateway({ ...config, origin: origin.url }, own), down: await startGatewayToClosedOrigin(config, own) };
  wsOrigin = await startWsOrigin();
  wsGateway = await startGateway({ ...GATEWAY_WS_CONFIG, trustProxy: [...GATEWAY_WS_CONFIG.trustProxy, "127.0.0.1"], origin: wsOrigin.url }, wsLimiter);
});
afterAll(async () => {
  agent.destroy();
  for (const { up, down } of Object.values(gateways)) {
    await down?.close();
    await up?.close();
  }
  await origin.close();
  await wsGateway?.close();
  await wsOrigin?.close();
});

function reply(outgoing: http.ClientRequest, incoming: http.IncomingMessage): GatewayReply {
  const chunks: Buffer[] = [];
  let first!: (text: string) => void;
  const firstChunk = new Promise<string>((resolve) => (first = resolve));
  const body = new Promise<string>((resolve, reject) => {
    incoming.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      first(chunk.toString());
    });
    incoming.on("end", () => resolve(Buffer.concat(chunks).toString()));
    incoming.on("error", reject);
  });
  body.catch(() => {}); // a case may never read a body that breaks off
  return {
    status: incoming.statusCode ?? 0,
    header: (name) => {
      const value = incoming.headers[name.toLowerCase()];
      return value === undefined ? null : String(value);
    },
    text: () => body,
    firstChunk: () => firstChunk,
    cancel: async () => {
      outgoing.destroy();
    },
  };
}

function send(mode: keyof typeof gateways, path: string, { ip, headers = {} }: { ip: string; headers?: Record<string, string> }): Promise<GatewayReply> {
  const forwardedFor = headers["x-forwarded-for"] ? `${headers["x-forwarded-for"]}, ${ip}` : ip;
  const { up, down } = gateways[mode];
  const url = `${originDown ? down!.url : up!.url}${path}`;
  return new Promise((resolve, reject) => {
    const outgoing = http.request(url, { agent, headers: { ...headers, "x-forwarded-for": forwardedFor } }, (incoming) => resolve(reply(outgoing, incoming)));
    outgoing.on("error", reject);
    outgoing.end();
  });
}

const ok: http.RequestListener = (_req, res) => res.end("ok");
const driver: Omit<GatewayDriver, "send"> = {
  origin: {
    hits: () => hits,
    ok: () => {
      handler = ok;
      originDown = false;
    },
    busyFor: (user, retryAfterS) => {
      handler = (req, res) => (req.headers["x-user"] === user ? res.writeHead(429, { "retry-after": String(retryAfterS) }).end("busy") : res.end("ok"));
    },
    stream: () => {
      const answers: http.ServerResponse[] = [];
      handler = (_req, res) => {
        res.writeHead(200);
        res.write("start");
        answers.push(res);
      };
      return {
        end: (rest) => {
          for (const res of answers) res.end(rest);
        },
        fail: () => {
          for (const res of answers) res.socket?.destroy();
        },
      };
    },
    unreachable: () => {
      originDown = true;
    },
  },
  counting: countingOrigin(),
  midAnswerFailure: /aborted/,
  logs: [],
  limiter,
};

/** The counting cases' origin answers (gateway-counting-table.ts). */
function countingOrigin(): CountingOrigin {
  return {
    answer: (status, headers, body) => {
      handler = (_req, res) => res.writeHead(status, headers).end(body);
    },
    hold: (status) => {
      const waiting: http.ServerResponse[] = [];
      let released = false;
      handler = (_req, res) => (released ? res.writeHead(status).end() : waiting.push(res));
      return {
        held: () => waiting.length,
        release: () => {
          released = true;
          for (const res of waiting) res.writeHead(status).end();
        },
      };
    },
    events: () => {
      const answers: http.ServerResponse[] = [];
      handler = (_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        res.flushHeaders();
        answers.push(res);
      };
      return {
        send: (text) => {
          for (const res of answers) res.write(text);
        },
        end: () => {
          for (const res of answers) res.end();
        },
      };
    },
  };
}

gatewayConformance("Node (memory store)", () => ({ ...driver, send: send.bind(null, "turnEnd"), logs: gateways.turnEnd.up!.logs }));
gatewayConformance("Node (a store of the caller's own)", () => ({ ...driver, send: send.bind(null, "atOnce"), logs: gateways.atOnce.up!.logs }));
gatewayCountingConformance("Node (memory store)", () => ({ ...driver, send: send.bind(null, "turnEnd"), logs: gateways.turnEnd.up!.logs }));
gatewayCountingConformance("Node (a store of the caller's own)", () => ({ ...driver, send: send.bind(null, "atOnce"), logs: gateways.atOnce.up!.logs }));
gatewayPlansConformance("Node (memory store)", () => ({ ...driver, send: send.bind(null, "turnEnd"), logs: gateways.turnEnd.up!.logs }));
gatewayAccessConformance("Node (memory store)", () => ({ ...driver, send: send.bind(null, "turnEnd"), logs: gateways.turnEnd.up!.logs }));
gatewayRepeatsConformance("Node (memory store)", () => ({ ...driver, send: send.bind(null, "turnEnd"), logs: gateways.turnEnd.up!.logs }));
gatewayWebSocketConformance("Node", () => nodeWebSocketDriver(() => wsGateway.port, () => wsOrigin, wsLimiter));
