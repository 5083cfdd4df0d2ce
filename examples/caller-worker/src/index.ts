// An example Worker that rate-limits its own users through Spillway, reached over a
// service binding (see wrangler.toml). It shows both ways in:
//   GET /?user=ann            → env.SPILLWAY.check(...)  (RPC: no token, the binding is the capability)
//   GET /via-fetch?user=ann   → env.SPILLWAY.fetch("/v1/check") (the HTTP API over the binding: needs the token)
// Run it next to Spillway: `npx wrangler dev -c wrangler.toml -c examples/caller-worker/wrangler.toml`.
import type { SpillwayRpc } from "../../../src/worker/index.js";

export interface Env {
  /** Service binding to Spillway's SpillwayRpc entrypoint. */
  SPILLWAY: Service<SpillwayRpc>;
  /** Spillway's /v1 token, only needed for the fetch path. */
  SPILLWAY_TOKEN?: string;
  /** A policy name from Spillway's config (default "per-second"). */
  SPILLWAY_POLICY?: string;
}

/** The part of Spillway's decision this Worker uses (SPEC §2). */
interface Decision {
  allowed: boolean;
  remaining: number;
  retryAfterMs: number | null;
}

async function checkByRpc(env: Env, key: string, policy: string): Promise<Decision> {
  return env.SPILLWAY.check({ key, policy });
}

async function checkByFetch(env: Env, key: string, policy: string): Promise<Decision> {
  // The host is ignored by a service binding; only the path matters.
  const response = await env.SPILLWAY.fetch("https://spillway/v1/check", {
    method: "POST",
    headers: { authorization: `Bearer ${env.SPILLWAY_TOKEN ?? ""}`, "content-type": "application/json" },
    body: JSON.stringify({ key, policy }),
  });
  // 200 admitted, 429 denied: both carry the decision. Anything else is Spillway saying no.
  if (response.status !== 200 && response.status !== 429) throw new Error(`spillway answered ${response.status}: ${await response.text()}`);
  return response.json<Decision>();
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const user = url.searchParams.get("user");
    if (!user) return Response.json({ error: "say who you are: ?user=NAME" }, { status: 400 });
    const via = url.pathname === "/via-fetch" ? "fetch" : "rpc";
    const policy = env.SPILLWAY_POLICY ?? "per-second";
    const key = `caller:${user}`;
    let decision: Decision;
    try {
      decision = via === "rpc" ? await checkByRpc(env, key, policy) : await checkByFetch(env, key, policy);
    } catch (error) {
      // Spillway unreachable or misconfigured (a wrong token, an unknown policy): say so.
      return Response.json({ error: (error as Error).message, via }, { status: 502 });
    }
    if (!decision.allowed) {
      const retryAfterSeconds = Math.max(1, Math.ceil((decision.retryAfterMs ?? 60_000) / 1000));
      return Response.json({ error: "slow down", via }, { status: 429, headers: { "retry-after": String(retryAfterSeconds) } });
    }
    return Response.json({ hello: user, via, remaining: decision.remaining });
  },
} satisfies ExportedHandler<Env>;
