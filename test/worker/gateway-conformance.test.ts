import { GATEWAY_TABLE_CONFIG, type CountingOrigin, type GatewayDriver, type GatewayReply, gatewayConformance } from "../conformance/gateway-table.js";
import { gatewayCountingConformance } from "../conformance/gateway-counting-table.js";
import { gatewayAccessConformance } from "../conformance/gateway-table-access.js";
import { gatewayRepeatsConformance } from "../conformance/gateway-table-repeats.js";
import { gatewayPlansConformance } from "../conformance/gateway-table-plans.js";
import { gatewayWebSocketConformance } from "../conformance/gateway-websocket-table.js";
import { gatewayApp } from "./gateway-helpers.js";
import { workerWebSocketDriver } from "./gateway-websocket-driver.js";

// The gateway conformance table on the Worker: decisions in the real Durable Objects, the
// client address in CF-Connecting-IP, the origin a stand-in behind fetchOrigin.
const gw = gatewayApp({ origin: "https://origin.test", ...GATEWAY_TABLE_CONFIG });
const ok = () => new Response("ok");
const encoder = new TextEncoder();

function reply(response: Response): GatewayReply {
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  const read = async () => {
    const chunk = reader ? await reader.read() : { done: true as const, value: undefined };
    return chunk.done ? undefined : decoder.decode(chunk.value, { stream: true });
  };
  return {
    status: response.status,
    header: (name) => response.headers.get(name),
    firstChunk: async () => (await read()) ?? "",
    text: async () => {
      let text = "";
      for (let piece = await read(); piece !== undefined; piece = await read()) text += piece;
      return text;
    },
    cancel: async () => reader?.cancel("client went away"),
  };
}

/** Makes the origin answer with bodies that stream until the test writes to them (`first`, if given, at once): their controllers. */
function streamingOrigin(init: ResponseInit, first?: string): ReadableStreamDefaultController<Uint8Array>[] {
  const controllers: ReadableStreamDefaultController<Uint8Array>[] = [];
  gw.origin.handler = () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controllers.push(controller);
          if (first !== undefined) controller.enqueue(encoder.encode(first));
        },
      }),
      init,
    );
  return controllers;
}

/** The counting cases' origin answers (gateway-counting-table.ts). */
const counting: CountingOrigin = {
  answer: (status, headers, body) => {
    gw.origin.handler = () => new Response(body, { status, headers });
  },
  hold: (status) => {
    const waiting: (() => void)[] = [];
    let released = false;
    gw.origin.handler = () => (released ? new Response(null, { status }) : new Promise<Response>((resolve) => waiting.push(() => resolve(new Response(null, { status })))));
    return {
      held: () => waiting.length,
      release: () => {
        released = true;
        for (const answer of waiting) answer();
      },
    };
  },
  events: () => {
    const controllers = streamingOrigin({ headers: { "content-type": "text/event-stream" } });
    return {
      send: (text) => {
        for (const controller of controllers) controller.enqueue(encoder.encode(text));
      },
      end: () => {
        for (const controller of controllers) controller.close();
      },
    };
  },
};

const driver: GatewayDriver = {
  send: async (path, { ip, headers }) => reply(await gw.send(path, { ip, headers })),
  origin: {
    hits: () => gw.origin.hits,
    ok: () => {
      gw.origin.handler = ok;
    },
    busyFor: (user, retryAfterS) => {
      gw.origin.handler = (request) =>
        request.headers.get("x-user") === user ? new Response("busy", { status: 429, headers: { "retry-after": String(retryAfterS) } }) : ok();
    },
    stream: () => {
      const controllers = streamingOrigin({}, "start");
      return {
        end: (rest) => {
          for (const controller of controllers) {
            controller.enqueue(encoder.encode(rest));
            controller.close();
          }
        },
        fail: () => {
          for (const controller of controllers) controller.error(new Error("origin connection reset"));
        },
      };
    },
    unreachable: () => {
      gw.origin.handler = () => {
        throw new TypeError("Network connection lost.");
      };
    },
  },
  counting,
  midAnswerFailure: /origin connection reset/,
  logs: gw.logs,
  limiter: gw.limiter,
  // The Durable Object store carries a counted answer's debit with the key's next request.
  headShowsBefore: true,
};

gatewayConformance("Worker", () => driver);
gatewayCountingConformance("Worker", () => driver);
gatewayPlansConformance("Worker", () => driver);
gatewayAccessConformance("Worker", () => driver);
gatewayRepeatsConformance("Worker", () => driver);

const webSockets = workerWebSocketDriver();
gatewayWebSocketConformance("Worker", () => webSockets);
