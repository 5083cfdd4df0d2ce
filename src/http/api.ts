import { Hono } from "hono";
import { rateLimitHeaders } from "../core/headers.js";
import { ValidationError } from "../core/validation.js";
import type { Checked, SpillwayService } from "../service.js";
import { bearerAuth } from "./auth.js";
import { FAILED_OPEN_HEADER } from "../wire.js";
import { BodyTooLargeError, costAboveCapacityDetail } from "./problems.js";

export const MAX_BODY_BYTES = 64 * 1024;
const API_ROUTES = ["/check", "/peek", "/reset", "/acquire", "/release", "/extend"] as const;

export interface ApiOptions {
  service: SpillwayService;
  /** The expected bearer token, read per request (a Worker secret or an env variable). */
  tokenOf: (env: unknown) => string | undefined;
}

/** Reads a JSON body of at most MAX_BODY_BYTES; anything else is a 400 (413 when too large) that says so. */
async function jsonBody(request: Request): Promise<unknown> {
  const text = await boundedText(request, MAX_BODY_BYTES);
  if (text.trim() === "") throw new ValidationError("body", "must be a JSON object, got an empty body");
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError("body", "must be valid JSON");
  }
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

function decisionResponse({ decision, policies, cost }: Checked, legacyHeaders: boolean, deniedStatus: 200 | 429): Response {
  const headers: Record<string, string> = { "content-type": "application/json", ...rateLimitHeaders(decision, policies, { legacy: legacyHeaders }) };
  if (decision.failedOpen) headers[FAILED_OPEN_HEADER] = "true";
  // Such a 429 has no Retry-After (rateLimitHeaders): the body says in words why.
  const body = decision.retryAfterMs === null ? { ...decision, detail: costAboveCapacityDetail(decision, cost) } : decision;
  return new Response(JSON.stringify(body), { status: decision.allowed ? 200 : deniedStatus, headers });
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** The /v1 decision API of README "HTTP API". */
export function createApi({ service, tokenOf }: ApiOptions): Hono {
  const api = new Hono();
  const legacy = service.config.legacyHeaders;
  // Auth guards Spillway's own routes only, so that with a gateway an origin's /v1/... paths
  // still reach the origin instead of meeting Spillway's 401. The body limit is jsonBody's.
  const auth = bearerAuth((c) => tokenOf(c.env));
  for (const route of API_ROUTES) api.use(route, auth);
  api.post("/check", async (c) => decisionResponse(await service.check(await jsonBody(c.req.raw)), legacy, 429));
  // A peek consumes nothing: it answers 200 even when a request would be denied.
  api.post("/peek", async (c) => decisionResponse(await service.peek(await jsonBody(c.req.raw)), legacy, 200));
  api.post("/reset", async (c) => {
    await service.reset(await jsonBody(c.req.raw));
    return c.body(null, 204);
  });
  api.post("/acquire", async (c) => {
    const result = await service.acquire(await jsonBody(c.req.raw));
    const response = json(result, result.acquired ? 200 : 429);
    if (!result.acquired && result.retryAfterMs !== null) response.headers.set("Retry-After", String(Math.max(1, Math.ceil(result.retryAfterMs / 1000))));
    if (result.failedOpen) response.headers.set(FAILED_OPEN_HEADER, "true");
    return response;
  });
  api.post("/release", async (c) => json(await service.release(await jsonBody(c.req.raw))));
  api.post("/extend", async (c) => json(await service.extend(await jsonBody(c.req.raw))));
  return api;
}
