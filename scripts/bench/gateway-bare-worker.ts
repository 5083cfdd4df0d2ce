// bench:gateway only: the least a proxy Worker does (the Worker's counterpart of
// minimal-proxy.mjs): forward the request to ORIGIN_URL with hop-by-hop fields stripped and
// hand the answer back. The gap to gateway-worker.ts is what Spillway's gateway costs.
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host"];

export default {
  async fetch(request: Request, env: { ORIGIN_URL: string }): Promise<Response> {
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    for (const name of HOP_BY_HOP) headers.delete(name);
    const answer = await fetch(new URL(url.pathname + url.search, env.ORIGIN_URL), { method: request.method, headers, body: request.body, redirect: "manual" });
    const out = new Headers(answer.headers);
    for (const name of HOP_BY_HOP) out.delete(name);
    return new Response(answer.body, { status: answer.status, headers: out });
  },
} satisfies ExportedHandler<{ ORIGIN_URL: string }>;
