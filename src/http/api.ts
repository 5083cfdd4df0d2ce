import { Hono } from "hono";
import { rateLimitHeaders } from "../core/headers.js";
import { ValidationError } from "../core/validation.js";
import type { Checked, SpillwayService } from "../service/service.js";
import { bearerAuth } from "./auth.js";
import { FAILED_OPEN_HEADER } from "../core/wire.js";
import { BodyTooLargeError, costAboveCapacityDetail, problem, problemResponse } from "./problems.js";
import { NoOverrideTableError } from "../overrides/admin.js";
import { findDuplicateKey } from "../core/json-duplicates.js";

export const MAX_BODY_BYTES = 64 * 1024;
const API_ROUTES = ["/check", "/peek", "/reset", "/acquire", "/release", "/extend", "/credits"] as const;
export type ApiRoute = (typeof API_ROUTES)[number];
const API_PATHS: ReadonlyMap<string, ApiRoute> = new Map(API_ROUTES.map((route) => [`/v1${route}`, route]));

/** The API route of a request path spelled exactly as README "HTTP API" does (`/v1/check`), else undefined. */
export const apiRouteOf = (path: string): ApiRoute | undefined => API_PATHS.get(path);

/**
 * An API answer, runtime-neutral: the Hono routes make it a Response, the Node server's fast
 * path (src/node/http/api-edge.ts) writes it straight to node:http.
 */
export interface ApiAnswer {
  status: number;
  headers: Record<string, string>;
  /** null: no body (204). */
  body: string | null;
}

export interface ApiOptions {
  service: SpillwayService;
  /** The expected bearer token, read per request (a Worker secret or an env variable). */
  tokenOf: (env: unknown) => string | undefined;
}

/** Reads a JSON body of at most MAX_BODY_BYTES; anything else is a 400 (413 when too large) that says so. */
async function jsonBody(request: Request): Promise<unknown> {
  return parseJsonBody(await boundedText(request, MAX_BODY_BYTES));
}

/**
 * A body's text as the API's JSON; an empty or malformed one is a 400 naming `body`, and so
 * is one that sets a field twice, on every /v1 route: JSON.parse keeps the last of two
 * silently, and `{"set": 10, "set": 1000000}` or `{"cost": 1, "cost": 0}` is a mistake (or a
 * trick) to name, as config files do. The scan costs about what JSON.parse does.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === "") throw new ValidationError("body", "must be a JSON object, got an empty body");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ValidationError("body", "must be valid JSON");
  }
  const duplicate = findDuplicateKey(text);
  if (duplicate) throw new ValidationError(duplicate.join("."), "appears twice: set each field once (JSON keeps the last one silently)");
  return body;
}

/**
 * The body as text, refused (BodyTooLargeError) past `maxBytes`. A declared Content-Length is
 * checked before anything is read, and such a body (the runtime delivers no more than it
 * declares) is read in one go: on Node, @hono/node-server then reads it straight off the
 * socket, where touching `request.body` first (as hono/body-limit does) builds a web Request
 * and stream and cost `spillway serve` a third of its throughput. A body of undeclared length
 * (chunked) is read as a stream that stops at the limit.
 */
async function boundedText(request: Request, maxBytes: number): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null && !request.headers.has("transfer-encoding")) {
    if (Number(declared) > maxBytes) throw new BodyTooLargeError(maxBytes);
    return request.text();
  }
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > maxBytes) {
      await reader.cancel();
      throw new BodyTooLargeError(maxBytes);
    }
    chunks.push(value);
  }
  return new Blob(chunks).text();
}

function decisionAnswer({ decision, policies, cost }: Checked, legacyHeaders: boolean, deniedStatus: 200 | 429): ApiAnswer {
  const headers: Record<string, string> = { "content-type": "application/json", ...rateLimitHeaders(decision, policies, { legacy: legacyHeaders }) };
  if (decision.failedOpen) headers[FAILED_OPEN_HEADER] = "true";
  // Such a 429 has no Retry-After (rateLimitHeaders): the body says in words why.
  const body = decision.retryAfterMs === null ? { ...decision, detail: costAboveCapacityDetail(decision, cost, policies) } : decision;
  return { status: decision.allowed ? 200 : deniedStatus, headers, body: JSON.stringify(body) };
}

const json = (body: unknown, status = 200): ApiAnswer => ({ status, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/**
 * What an API route answers to a parsed body (after auth and the body limit). Throws what the
 * service throws: the caller maps it with problemFor.
 */
export function answerApi(service: SpillwayService, route: ApiRoute, body: unknown): Promise<ApiAnswer> {
  // /check, the hot path, in one reaction; the other routes as an async function.
  // A debit answers 200 with the state after it, whether or not the key is now over its limit.
  if (route === "/check") return service.check(body).then((checked) => decisionAnswer(checked, service.config.legacyHeaders, checked.debit ? 200 : 429));
  return answerOther(service, route, body);
}

async function answerOther(service: SpillwayService, route: Exclude<ApiRoute, "/check">, body: unknown): Promise<ApiAnswer> {
  const legacy = service.config.legacyHeaders;
  switch (route) {
    case "/peek":
      // A peek consumes nothing: it answers 200 even when a request would be denied.
      return decisionAnswer(await service.peek(body), legacy, 200);
    case "/reset":
      await service.reset(body);
      return { status: 204, headers: {}, body: null };
    case "/acquire": {
      const result = await service.acquire(body);
      const answer = json(result, result.acquired ? 200 : 429);
      if (!result.acquired && result.retryAfterMs !== null) answer.headers["retry-after"] = String(Math.max(1, Math.ceil(result.retryAfterMs / 1000)));
      if (result.failedOpen) answer.headers[FAILED_OPEN_HEADER] = "true";
      return answer;
    }
    case "/release":
      return json(await service.release(body));
    case "/extend":
      return json(await service.extend(body));
    case "/credits":
      return json(await service.credits(body));
  }
}

const toResponse = ({ status, headers, body }: ApiAnswer) => new Response(body, { status, headers });

/** The /v1 decision API of README "HTTP API". */
export function createApi({ service, tokenOf }: ApiOptions): Hono {
  const api = new Hono();
  // Auth guards Spillway's own routes only, so that with a gateway an origin's /v1/... paths
  // still reach the origin instead of meeting Spillway's 401. The body limit is jsonBody's.
  const auth = bearerAuth((c) => tokenOf(c.env));
  for (const route of API_ROUTES) {
    api.use(route, auth);
    api.post(route, async (c) => toResponse(await answerApi(service, route, await jsonBody(c.req.raw))));
  }
  // Runtime overrides (docs/overrides.md): rare admin calls, served by the app on both runtimes.
  const admin = service.overrideAdmin;
  const answered = (run: () => Promise<unknown>) =>
    run().then(
      (body) => toResponse(json(body)),
      (error: unknown) => {
        if (error instanceof NoOverrideTableError) return problemResponse(problem(503, error.message));
        throw error;
      },
    );
  api.use("/overrides", auth);
  api.put("/overrides", async (c) => answered(async () => admin.put(await jsonBody(c.req.raw))));
  api.delete("/overrides", async (c) => answered(async () => admin.delete(await jsonBody(c.req.raw))));
  api.get("/overrides", (c) => answered(() => admin.list(c.req.query())));
  return api;
}
