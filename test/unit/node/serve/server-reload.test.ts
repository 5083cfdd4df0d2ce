import { describe, expect, it } from "vitest";
import { type SpillwayConfig, parseConfig } from "../../../../src/config/config.js";
import { createNodeGateway } from "../../../../src/node/http/gateway.js";
import { originAgents } from "../../../../src/node/http/origin-agents.js";
import type { RuntimeParts } from "../../../../src/node/serve/runtime.js";
import { startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { echoOf as echo, openWebSocket as open } from "../http/websocket-client.js";
import { startWsOrigin } from "../../../conformance/ws-origin.js";

// startServer's reload in process: what the CLI's SIGHUP does (test/unit/node/cli/reload.test.ts),
// for the parts a signal test does not reach: a gateway that appears and goes, a WebSocket
// opened on a retired generation (kept open, then cut by close()), and the same leases.

const TOKEN = "reload-token";

describe("startServer: reload", { timeout: 30_000 }, () => {
  it("swaps the config whole: a gateway appears and goes, a WebSocket of the old generation stays open, state and leases carry over, close() cuts it", async () => {
    const origin = await startWsOrigin();
    const limiter = new MemoryStore();
    const agents = originAgents();
    const policies = [
      { name: "slot", algorithm: "concurrency", limit: 1, lease: "30s" },
      { name: "per-key", algorithm: "sliding-log", limit: 3, period: "1h" },
    ];
    const withGateway = (limit: number): RuntimeParts => {
      const config: SpillwayConfig = parseConfig({ origin: origin.url, policies: policies.map((p) => (p.name === "per-key" ? { ...p, limit } : p)), routes: [{ match: { path: "/ws/*" }, key: "header:x-user", policies: ["slot"] }] });
      return { config, fallback: createNodeGateway({ config, limiter, agents }) };
    };
    const server = await startServer({ config: parseConfig({ policies }), limiter, port: 0, token: TOKEN });
    const check = async (key: string) => {
      const response = await fetch(`${server.url}/v1/check`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ key, policy: "per-key" }) });
      return (await response.json()) as { allowed: boolean; limit: number; remaining: number };
    };
    try {
      expect(server.generation).toBe(1);
      expect(await check("k")).toMatchObject({ allowed: true, limit: 3, remaining: 2 });
      // No origin yet: the path is not forwarded anywhere.
      expect((await fetch(`${server.url}/ws/echo`)).status).toBe(404);

      expect(server.reload(withGateway(5))).toBe(2);
      const ws = await open(server.port, "/ws/echo", { "x-user": "u1" });
      expect(await echo(ws, "before")).toBe("before");
      expect(await check("k")).toMatchObject({ allowed: true, limit: 5, remaining: 3 });

      // The gateway goes: the WebSocket opened on generation 2 stays, and keeps its lease.
      expect(server.reload({ config: parseConfig({ policies }) })).toBe(3);
      expect(await echo(ws, "after")).toBe("after");
      expect((await fetch(`${server.url}/ws/echo`)).status).toBe(404);
      expect(await check("k")).toMatchObject({ allowed: true, limit: 3, remaining: 0 });

      // Back again: the lease held on the retired generation still counts (limit 1).
      server.reload(withGateway(5));
      await expect(open(server.port, "/ws/echo", { "x-user": "u1" })).rejects.toThrow("answered 429");

      expect(server.generation).toBe(4);

      const closed = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
      await server.close();
      expect(await closed).toBeGreaterThan(0);
    } finally {
      await origin.close();
      agents["http:"].destroy();
    }
  });
});
