// The ext_authz messages as @grpc/proto-loader reads and writes them (RLS_PROTO_OPTIONS: the
// proto's field names, enums by name, oneofs named), to and from the runtime-neutral shapes
// of gateway/forward-auth-envoy.ts.
import type { EnvoyGrpcCheck } from "../../gateway/forward-auth-envoy.js";
import { quietly } from "../http/request-facts.js";

interface HeaderValue {
  key?: string;
  value?: string;
  raw_value?: Buffer;
}

/** What Envoy sends (external_auth.proto, attribute_context.proto): only the fields read here. */
export interface CheckRequestMessage {
  attributes?: {
    source?: { address?: { socket_address?: { address?: string } } };
    request?: {
      http?: {
        method?: string;
        path?: string;
        host?: string;
        headers?: Record<string, string>;
        /** With the filter's encode_raw_headers: every field, raw_value in bytes. */
        header_map?: { headers?: HeaderValue[] };
      };
    };
  };
}

interface HeaderValueOption {
  header: { key: string; value: string };
}

/** The CheckResponse written back. */
export interface CheckAnswer {
  status: { code: number; message?: string };
  ok_response?: { headers: HeaderValueOption[]; response_headers_to_add: HeaderValueOption[] };
  denied_response?: { status: { code: number }; headers: HeaderValueOption[]; body: string };
}

/** google.rpc.Code values the answer uses. */
const OK = 0;
const INVALID_ARGUMENT = 3;
const PERMISSION_DENIED = 7;

/** The request's fields: header_map when Envoy sends it (raw headers), else the headers map; names lower-cased. */
function headersOf(http: NonNullable<NonNullable<NonNullable<CheckRequestMessage["attributes"]>["request"]>["http"]>): Map<string, string> {
  const headers = new Map<string, string>();
  const list = http.header_map?.headers;
  if (list && list.length > 0) {
    for (const { key, value, raw_value: raw } of list) {
      if (!key) continue;
      const text = value ? value : raw ? raw.toString("latin1") : "";
      const name = key.toLowerCase();
      const before = headers.get(name);
      // Envoy sends a repeated field once per line here: joined as the headers map joins them.
      headers.set(name, before === undefined ? text : `${before},${text}`);
    }
    return headers;
  }
  for (const [key, value] of Object.entries(http.headers ?? {})) headers.set(key.toLowerCase(), value);
  return headers;
}

export function checkOf(message: CheckRequestMessage, peerIp: string | undefined, signal: () => AbortSignal): EnvoyGrpcCheck {
  const attributes = message.attributes;
  const http = attributes?.request?.http;
  const sourceIp = attributes?.source?.address?.socket_address?.address || undefined;
  return {
    http: http ? { method: http.method, path: http.path, host: http.host, headers: headersOf(http) } : undefined,
    sourceIp,
    peerIp,
    signal,
    defer: quietly,
  };
}

/** The answer's fields as HeaderValueOptions (append left to its default: false, the value replaces). */
function optionsOf(headers: Headers, skip: ReadonlySet<string>): HeaderValueOption[] {
  const options: HeaderValueOption[] = [];
  headers.forEach((value, key) => {
    if (!skip.has(key)) options.push({ header: { key, value } });
  });
  return options;
}

/** Not for the upstream request: the decision's own framing. */
const BODY_FIELDS = new Set(["content-type", "content-length"]);

/**
 * The decision's Response as a CheckResponse. 200: OK, the RateLimit fields (and
 * Spillway-Route) in ok_response.headers for the upstream request and in
 * response_headers_to_add for the client's answer. Anything else: denied with the
 * gateway's status, fields and problem body, which Envoy answers the client with.
 */
export async function checkAnswerOf(response: Response): Promise<CheckAnswer> {
  if (response.status === 200) {
    const fields = optionsOf(response.headers, BODY_FIELDS);
    return { status: { code: OK }, ok_response: { headers: fields, response_headers_to_add: fields } };
  }
  const body = await response.text();
  let detail = "";
  try {
    detail = String((JSON.parse(body) as { detail?: unknown }).detail ?? "");
  } catch {
    // Not a problem body: the status says enough.
  }
  const code = response.status === 400 ? INVALID_ARGUMENT : PERMISSION_DENIED;
  const message = detail || `denied with HTTP ${response.status}`;
  return { status: { code, message }, denied_response: { status: { code: response.status }, headers: optionsOf(response.headers, new Set(["content-length"])), body } };
}
