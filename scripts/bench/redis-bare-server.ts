// The baseline of bench:redis's HTTP rows: a bare Hono app on @hono/node-server that answers
// POST /v1/check with the same JSON shape and RateLimit headers as `spillway serve`, with no
// store, no validation and no auth. Usage: redis-bare-server.ts PORT
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { type Decision, parsePolicy, rateLimitHeaders } from "../../src/core/index.js";
import { SERVER_POLICY } from "./redis-policies.js";

const port = Number(process.argv[2]);
const policy = parsePolicy(SERVER_POLICY, "policy");
let remaining = policy.burst;

const app = new Hono();
app.get("/healthz", (c) => c.json({ ok: true, store: "none" }));
app.post("/v1/check", async (c) => {
  const body = (await c.req.json()) as { key?: unknown };
  if (typeof body.key !== "string") return c.json({ title: "key must be a string" }, 400);
  remaining = remaining > 0 ? remaining - 1 : policy.burst;
  const result = { policy: policy.name, allowed: true, limit: policy.burst, remaining, resetMs: 1, retryAfterMs: 0 };
  const decision: Decision = { ...result, waitMs: 0, policies: [result] };
  return new Response(JSON.stringify(decision), { status: 200, headers: { "content-type": "application/json", ...rateLimitHeaders(decision, [policy]) } });
});
serve({ fetch: app.fetch, port, hostname: "127.0.0.1" });
