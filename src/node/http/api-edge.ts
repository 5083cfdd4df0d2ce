import { spelled } from "./header-names.js";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type ApiAnswer, type ApiRoute, MAX_BODY_BYTES, answerApi, parseJsonBody } from "../../http/api.js";
import { authRefusal } from "../../http/auth.js";
import { BodyTooLargeError, type Problem, loggedProblem, problemFields } from "../../http/problems.js";
import type { SpillwayService } from "../../service/service.js";
import { rawField } from "./raw-fields.js";
import { TurnQueue } from "./turn-queue.js";
import { TRACE_ATTRIBUTES, currentTracer, type SpillwayTracer } from "../../observe/trace.js";
import { traceRequest } from "./request-trace.js";

const problemAnswer = (problem: Problem, headers: Record<string, string> = {}): ApiAnswer => ({
  status: problem.status,
  headers: { "content-type": "application/problem+json", ...problemFields(problem), ...headers },
  body: JSON.stringify(problem),
});

/** A client gone before its body ended: there is no one to answer (a settled promise ignores it). */
const CLIENT_GONE = new Error("the client closed the request before its body ended");

/**
 * The body as text, refused (BodyTooLargeError) past `maxBytes`, as src/http/api.ts's
 * boundedText reads it: a declared Content-Length over the limit before anything is read, a
 * chunked body as soon as it passes the limit (node:http then discards the rest). Decoded as
 * a web Request's text() decodes: UTF-8, a leading byte order mark dropped.
 */
function boundedText(req: IncomingMessage, maxBytes: number): Promise<string> {
  // From rawHeaders: `req.headers` would build an object of every field for these two.
  const declared = rawField(req.rawHeaders, "content-length");
  if (declared !== undefined && rawField(req.rawHeaders, "transfer-encoding") === undefined && Number(declared) > maxBytes) return Promise.reject(new BodyTooLargeError(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= maxBytes) return void chunks.push(chunk);
      req.off("data", onData);
      reject(new BodyTooLargeError(maxBytes));
    };
    req.on("data", onData);
    req.once("end", () => {
      const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString("utf8");
      resolve(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    });
    req.once("close", () => reject(CLIENT_GONE));
  });
}

/**
 * The /v1 decision API on node:http, for `spillway serve`: the same auth, body limit, service
 * call and answers as the Hono routes of src/http/api.ts (the same functions), without
 * converting each request and answer to web Request and Response. The server's listener
 * (src/node/serve/dispatch.ts) hands it POSTs to an API path spelled exactly; every other spelling
 * and method still goes to the Hono app, which answers 404 or 405.
 */
export class NodeApiEdge {
  readonly #service: SpillwayService;
  readonly #tokenOf: () => string | undefined;
  /** A turn's requests are answered together at its end, with either store: twice the decisions per CPU second with the memory store, a tenth more with Redis. */
  readonly #turn = new TurnQueue<ApiRequest>((request) => this.#answer(request));
  /** Set when tracing is on (src/observe/trace.ts): read once here, not per request. */
  readonly #tracer: SpillwayTracer | undefined = currentTracer();

  constructor(service: SpillwayService, tokenOf: () => string | undefined) {
    this.#service = service;
    this.#tokenOf = tokenOf;
  }

  handle(req: IncomingMessage, res: ServerResponse, route: ApiRoute): void {
    this.#turn.push({ req, res, route });
  }

  #answer(request: ApiRequest): void {
    // A client gone before its turn asked for nothing more.
    if (request.res.destroyed) return;
    const tracer = this.#tracer;
    if (!tracer) return this.#decide(request);
    traceRequest(tracer, `spillway.api /v1${request.route}`, request.req, request.res, (span) => {
      span.setAttribute(TRACE_ATTRIBUTES.httpRoute, `/v1${request.route}`);
      this.#decide(request);
    });
  }

  #decide({ req, res, route }: ApiRequest): void {
    const fail = (error: unknown) => {
      if (error === CLIENT_GONE) return;
      if (res.headersSent) res.destroy();
      else write(res, problemAnswer(loggedProblem(error)));
    };
    const refusal = authRefusal(this.#tokenOf(), rawField(req.rawHeaders, "authorization"));
    if (refusal) return write(res, problemAnswer(refusal.problem, refusal.headers));
    // Two reactions, not a chain that resolves one promise with another (two more turns).
    boundedText(req, MAX_BODY_BYTES).then((text) => {
      let answered: Promise<ApiAnswer>;
      try {
        answered = answerApi(this.#service, route, parseJsonBody(text));
      } catch (error) {
        return fail(error);
      }
      answered.then((answer) => write(res, answer), fail);
    }, fail);
  }
}

interface ApiRequest {
  req: IncomingMessage;
  res: ServerResponse;
  route: ApiRoute;
}

function write(res: ServerResponse, { status, headers: given, body }: ApiAnswer): void {
  // Spillway's fields spelled alike on every answer (the API builds some from a web Headers).
  const headers: Record<string, string> = {};
  for (const name in given) headers[spelled(name)] = given[name]!;
  if (body === null) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  headers["content-length"] = String(Buffer.byteLength(body));
  res.writeHead(status, headers);
  res.end(body);
}
