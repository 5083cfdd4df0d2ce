// A stand-in for Envoy's ext_authz HTTP service (Envoy is not installable here), built from
// the ext_authz filter config docs/proxies.md shows, doing what Envoy's documentation says it
// does: the check goes to `path_prefix` + the original path and query, with the original
// method, Host, Authorization, `content-length: 0` and the fields `allowed_headers` matches;
// `use_remote_address` appends the client's address to X-Forwarded-For first. A 200 lets the
// request through, with `allowed_upstream_headers` copied onto it and
// `allowed_client_headers_on_success` onto the answer; any other status goes to the client
// whole (its status, every field, its body).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parse as parseYaml } from "yaml";
import { extractSnippets } from "../../../package/snippets.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const DOC = join(import.meta.dirname, "../../../../docs/proxies.md");

interface Matcher {
  exact?: string;
  prefix?: string;
  suffix?: string;
  contains?: string;
  ignore_case?: boolean;
}

export interface EnvoyAuthzFilter {
  path_prefix: string;
  cluster: string;
  allowed_headers: Matcher[];
  allowed_upstream_headers: Matcher[];
  allowed_client_headers_on_success: Matcher[];
  use_remote_address: boolean;
}

/** The yaml block of docs/proxies.md whose text contains `marker` (a bootstrap), parsed. */
export function envoyBootstrap(marker: string): Record<string, any> {
  const block = extractSnippets("docs/proxies.md", readFileSync(DOC, "utf8")).find((snippet) => snippet.lang === "yaml" && snippet.code.includes(marker));
  if (!block) throw new Error(`docs/proxies.md has no yaml block with ${marker}`);
  return parseYaml(block.code) as Record<string, any>;
}

/** The connection manager and its ext_authz filter's config of a docs bootstrap. */
export function extAuthzOf(bootstrap: Record<string, any>): { manager: Record<string, any>; filter: Record<string, any> } {
  const manager = bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
  const filter = manager.http_filters.find((entry: { name: string }) => entry.name === "envoy.filters.http.ext_authz").typed_config;
  return { manager, filter };
}

export function httpFilterOfDocs(): EnvoyAuthzFilter {
  const { manager, filter } = extAuthzOf(envoyBootstrap("http_service"));
  const service = filter.http_service;
  return {
    path_prefix: service.path_prefix,
    cluster: service.server_uri.cluster,
    allowed_headers: service.authorization_request?.allowed_headers?.patterns ?? [],
    allowed_upstream_headers: service.authorization_response?.allowed_upstream_headers?.patterns ?? [],
    allowed_client_headers_on_success: service.authorization_response?.allowed_client_headers_on_success?.patterns ?? [],
    use_remote_address: manager.use_remote_address === true,
  };
}

function matches(name: string, matchers: Matcher[]): boolean {
  return matchers.some((m) => {
    const [subject, fold] = m.ignore_case ? [name.toLowerCase(), (s: string) => s.toLowerCase()] : [name, (s: string) => s];
    if (m.exact !== undefined) return subject === fold(m.exact);
    if (m.prefix !== undefined) return subject.startsWith(fold(m.prefix));
    if (m.suffix !== undefined) return subject.endsWith(fold(m.suffix));
    if (m.contains !== undefined) return subject.includes(fold(m.contains));
    return false;
  });
}

/** Always sent to the HTTP service, whatever allowed_headers says (Envoy's docs). */
const ALWAYS = new Set(["host", "authorization"]);
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "content-length"]);

interface Exchange {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function exchange(agent: http.Agent, port: number, method: string, path: string, headers: http.OutgoingHttpHeaders): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}

function copied(headers: http.IncomingHttpHeaders, keep: (name: string) => boolean): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && keep(name)) out[name] = value;
  return out;
}

/** Starts the stand-in on a free port: client → it → Spillway's check → the origin. */
export async function startEnvoyHttpStandIn(filter: EnvoyAuthzFilter, ports: { spillway: number; origin: number }): Promise<{ url: string; close(): Promise<void> }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers };
    if (filter.use_remote_address) headers["x-forwarded-for"] = headers["x-forwarded-for"] ? `${headers["x-forwarded-for"]}, ${req.socket.remoteAddress}` : req.socket.remoteAddress;
    const check = { ...copied(headers, (name) => ALWAYS.has(name) || matches(name, filter.allowed_headers)), "content-length": "0" };
    const method = req.method ?? "GET";
    req.resume();
    exchange(agent, ports.spillway, method, `${filter.path_prefix}${req.url}`, check)
      .then(async (decision) => {
        if (decision.status !== 200) {
          res.writeHead(decision.status, copied(decision.headers, (name) => !HOP.has(name))).end(decision.body);
          return;
        }
        const upstream = { ...copied(headers, (name) => !HOP.has(name)), ...copied(decision.headers, (name) => matches(name, filter.allowed_upstream_headers)) };
        const answer = await exchange(agent, ports.origin, method, req.url ?? "/", upstream);
        const onSuccess = copied(decision.headers, (name) => matches(name, filter.allowed_client_headers_on_success));
        res.writeHead(answer.status, { ...copied(answer.headers, (name) => !HOP.has(name)), ...onSuccess }).end(answer.body);
      })
      .catch(() => res.writeHead(403).end()); // Envoy's failure_mode_allow: false
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      agent.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
