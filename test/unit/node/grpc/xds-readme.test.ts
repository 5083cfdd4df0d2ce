import { startRlsServer } from "../../../../src/node/grpc/server.js";
import { startXdsConfig } from "../../../../src/node/grpc/xds-client.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { README_CONFIGS } from "./rls-helpers.js";
import { QUOTA_NOW_MS, describeQuotaSuite } from "./quota-suite.js";
import { describeRlsSuite } from "./rls-suite.js";
import { TestXdsServer, rateLimitConfigOf } from "./xds-server.js";

/** The README files a RateLimitConfig carries: the others hold Spillway's extensions, `atomic`, or share_threshold (not in rls_conf.proto). */
const PUSHED = ["mongo_cps.yaml", "messaging.yaml", "edge_proxy_per_ip.yaml", "example6.yaml", "example7.yaml"];

const silent = () => {};
const quiet = { info: silent, warn: silent, error: silent };
const settings = (xds: TestXdsServer) => ({ serverUrl: xds.address, nodeId: "readme", nodeMetadata: {}, retryIntervalMs: 50, headers: {}, forceStart: false });

/**
 * The README suite's answers (test/unit/node/grpc/rls-suite.ts) with the same config pushed by an
 * xDS server instead of read from files: what Envoy Gateway users get.
 */
describeRlsSuite(
  "the memory store, its config pushed over xDS",
  async () => {
    const limiter = new MemoryStore();
    return { limiter, close: () => limiter.close() };
  },
  {
    async start(limiter, stats) {
      const xds = await new TestXdsServer().start();
      xds.push("1", PUSHED.map((name) => rateLimitConfigOf(name, README_CONFIGS[name]!)));
      const server = await startRlsServer({ limiter, config: { domains: new Map() }, port: 0, stats, responseHeaders: true });
      const source = await startXdsConfig(settings(xds), { apply: (config) => server.setConfig(config), log: quiet });
      await source.first;
      return { server, close: async () => (source.close(), await server.close(), xds.stop()) };
    },
    skip: ["wildcard values", "Spillway's extensions", '"atomic": false'],
  },
);

/** The quota suite (the reference's example.yaml: quota_mode, metadata, global modes) with example.yaml pushed over xDS. */
describeQuotaSuite(
  "the memory store, example.yaml pushed over xDS",
  async () => {
    const limiter = new MemoryStore({ clockMs: () => QUOTA_NOW_MS });
    return { limiter, close: () => limiter.close() };
  },
  async (server, name, yaml) => {
    const xds = await new TestXdsServer().start();
    xds.push("1", [rateLimitConfigOf(name, yaml)]);
    const source = await startXdsConfig(settings(xds), { apply: (config) => server.setConfig(config), log: quiet });
    await source.first;
    return async () => (source.close(), xds.stop());
  },
);
