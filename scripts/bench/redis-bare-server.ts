// The baseline of bench:redis's HTTP rows: the minimal node:http server that does what
// `spillway serve --redis` does for POST /v1/check: reads the body, JSON.parse, one
// RedisStore.check with the same policy, and answers the same decision JSON and RateLimit
// headers. No validation beyond the key, no auth, no observer.
// Usage: redis-bare-server.ts PORT REDIS_URL
import { createServer } from "node:http";
import { parsePolicy, rateLimitHeaders } from "../../src/core/index.js";
import { RedisStore } from "../../src/redis.js";
import { SERVER_POLICY } from "./redis-policies.js";

const port = Number(process.argv[2]);
const store = new RedisStore({ url: process.argv[3]! });
const policies = [parsePolicy(SERVER_POLICY, "policy")];
const options = { cost: 1, mode: "reject", maxWaitMs: 0 } as const;

function answer(res: import("node:http").ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

createServer((req, res) => {
  if (req.url === "/healthz") return answer(res, 200, { ok: true, store: "redis" });
  let text = "";
  req.setEncoding("utf8");
  req.on("data", (chunk: string) => (text += chunk));
  req.on("end", () => {
    const body = JSON.parse(text) as { key?: unknown };
    if (typeof body.key !== "string") return answer(res, 400, { title: "key must be a string" });
    store.check(body.key, policies, options).then(
      (decision) => answer(res, decision.allowed ? 200 : 429, decision, rateLimitHeaders(decision, policies)),
      () => answer(res, 503, { title: "store error" }),
    );
  });
}).listen(port, "127.0.0.1");
