import http from "node:http";
import { afterAll, beforeAll } from "vitest";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { NAMESPACE_CONFIG, apiNamespaceConformance, serveNamespaceDriver } from "../conformance/api-namespace-table.js";
import { type GatewayUnderTest, type Running, startGateway, startOrigin } from "../unit/node/http/gateway-helpers.js";

// `spillway serve --redis`: /v1 keys and gateway route keys apart in Redis (the table's cases).
let redis: RedisServer;
let store: RedisStore;
let origin: Running & { server: http.Server };
let gateway: GatewayUnderTest;
beforeAll(async () => {
  redis = await startRedis();
  store = new RedisStore({ url: redis.url, timeoutMs: 1000, log: () => {} });
  await store.ready();
  origin = await startOrigin((_req, res) => res.end("ok"));
  gateway = await startGateway({ ...NAMESPACE_CONFIG, origin: origin.url }, store);
});
afterAll(async () => {
  await gateway?.close();
  await origin?.close();
  await store?.close();
  await redis?.stop();
});

apiNamespaceConformance("spillway serve (Redis)", () => serveNamespaceDriver(gateway.url, gateway.limiter));
