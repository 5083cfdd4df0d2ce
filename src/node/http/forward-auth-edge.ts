import type { IncomingMessage, ServerResponse } from "node:http";
import { ForwardAuth } from "../../gateway/forward-auth.js";
import { answerEnvoyHttp } from "../../gateway/forward-auth-envoy.js";
import type { GatewayCore } from "../../gateway/core.js";
import type { HeaderLookup } from "../../gateway/keys.js";
import { errorResponse } from "../../http/problems.js";
import { flatFields } from "./message-fields.js";
import { rawField, rawFieldRepeated } from "./raw-fields.js";
import { quietly } from "./request-facts.js";

/** The check request's fields as Headers.get reads them, from rawHeaders (repeats joined). */
class RawLookup implements HeaderLookup {
  readonly #raw: string[];
  constructor(raw: string[]) {
    this.#raw = raw;
  }
  get(name: string): string | null {
    return rawField(this.#raw, name) ?? null;
  }
  repeated(lowerName: string): boolean {
    return rawFieldRepeated(this.#raw, lowerName);
  }
}

/**
 * `/v1/forward-auth` on node:http (any method: proxies send the original one, or GET): the
 * proxy's check request in, the decision out (gateway/forward-auth.ts). Its body, if any, is
 * not read: the decision is made from the fields.
 */
export class NodeForwardAuthEdge {
  readonly #auth: ForwardAuth;
  constructor(core: GatewayCore) {
    this.#auth = new ForwardAuth(core);
  }

  /** The decision itself, for the other transports of the same runtime (Envoy's gRPC Check). */
  get auth(): ForwardAuth {
    return this.#auth;
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const target = req.url ?? "";
    const query = target.indexOf("?");
    const input = { headers: new RawLookup(req.rawHeaders), socketIp: req.socket.remoteAddress, searchParams: new URLSearchParams(query < 0 ? "" : target.slice(query + 1)), signal: closeSignal(res), defer: quietly };
    req.resume();
    answered(this.#auth.answer(input), res);
  }

  /** `/v1/forward-auth/envoy/…`: Envoy's ext_authz HTTP service, the original path after the prefix (gateway/forward-auth-envoy.ts). */
  handleEnvoy(req: IncomingMessage, res: ServerResponse): void {
    const check = { method: req.method ?? "GET", target: req.url ?? "", headers: new RawLookup(req.rawHeaders), socketIp: req.socket.remoteAddress, signal: closeSignal(res), defer: quietly };
    req.resume();
    answered(answerEnvoyHttp(this.#auth, check), res);
  }
}

/** Aborted when the proxy goes away before the answer is written; made only when asked for (a delay). */
function closeSignal(res: ServerResponse): () => AbortSignal {
  let controller: AbortController | undefined;
  return () => {
    if (!controller) {
      const made = (controller = new AbortController());
      res.once("close", () => {
        if (!res.writableFinished) made.abort();
      });
    }
    return controller.signal;
  };
}

function answered(answer: Promise<Response>, res: ServerResponse): void {
  answer.then(
    (response) => write(res, response),
    (error: unknown) => write(res, errorResponse(error)),
  );
}

function write(res: ServerResponse, response: Response): void {
  if (res.destroyed) return;
  res.writeHead(response.status, flatFields(response.headers));
  if (!response.body) return void res.end();
  response.arrayBuffer().then((body) => res.end(Buffer.from(body)), () => res.destroy());
}
