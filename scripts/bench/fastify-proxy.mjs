// bench:gateway's contender: fastify 5 with @fastify/http-proxy and @fastify/rate-limit, a
// per-IP limit no benchmark reaches (the same shape as the spillway rows).
// usage: node scripts/bench/fastify-proxy.mjs PORT ORIGIN_URL
import Fastify from "fastify";
import proxy from "@fastify/http-proxy";
import rateLimit from "@fastify/rate-limit";

const [port = "8796", originText = "http://127.0.0.1:8790"] = process.argv.slice(2);
const app = Fastify({ logger: false });
await app.register(rateLimit, { global: true, max: 1_000_000_000, timeWindow: 1000 });
await app.register(proxy, { upstream: originText, prefix: "/api", rewritePrefix: "/api", http: { agentOptions: { keepAlive: true, maxSockets: 256 } } });
await app.listen({ port: Number(port), host: "127.0.0.1" });
console.log(`fastify proxy on ${port}`);
