import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

// `notReady` (a worker of `spillway serve --workers N` until every worker listens): /healthz
// answers 503 with the reason whatever the store says, then the store's own answer again.

describe("startServer's notReady", () => {
  it("makes /healthz a 503 naming why, until it answers undefined; decisions are served meanwhile", async () => {
    let reason: string | undefined = "starting: not every worker of --workers listens yet";
    const server = await startServer({ config: parseConfig({ policies: [{ name: "p", limit: 5, period: "1m" }] }), limiter: new MemoryStore(), port: 0, token: "t", notReady: () => reason });
    try {
      const starting = await fetch(`${server.url}/healthz`);
      expect(starting.status).toBe(503);
      expect(starting.headers.get("cache-control")).toBe("no-store");
      expect(await starting.json()).toEqual({ ok: false, store: "memory", error: "starting: not every worker of --workers listens yet" });
      const decision = await fetch(`${server.url}/v1/check`, { method: "POST", headers: { authorization: "Bearer t", "content-type": "application/json" }, body: JSON.stringify({ key: "k", policy: "p" }) });
      expect(decision.status).toBe(200);
      reason = undefined;
      const ready = await fetch(`${server.url}/healthz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ ok: true, store: "memory" });
    } finally {
      await server.close();
    }
  });
});
