import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Limiter } from "../../../../src/core/limiter.js";
import type { LogLine } from "../../../../src/observe/log-lines.js";
import { originAgents } from "../../../../src/node/http/origin-agents.js";
import { type Serving, configOf, configReloader, runtimePartsOf } from "../../../../src/node/serve/serving.js";
import { startServer } from "../../../../src/node/serve/server.js";

// A reload that keeps a policy's name but changes its algorithm (issue 30, row 8): the state
// its keys hold was written by the old algorithm, which the new one cannot read, so every key
// starts fresh under it. That is the documented rule (docs/operations.md, Reload); what this
// holds is that it is said: the reload's log line names each such policy, and what the line
// says is what the store then does. Run on the memory store (unit) and on Redis (redis).

const TOKEN = "reload-test-token";
const hourly = (algorithm: string, limit = 5) => ({ name: "hourly", algorithm, limit, period: "1h" });
const KEPT = { name: "kept", algorithm: "gcra", limit: 5, period: "1h", burst: 5 };

export function reloadAlgorithmSuite(storeName: string, openStore: () => Promise<Limiter>): void {
  describe(`spillway serve reload on ${storeName}: a policy that changes its algorithm`, () => {
    it("names the policies whose keys start fresh in the reload's log line, and only those start fresh", async () => {
      const dir = mkdtempSync(join(tmpdir(), "spillway-reload-"));
      const path = join(dir, "spillway.config.json");
      const write = (policies: object[]) => {
        const text = JSON.stringify({ policies });
        writeFileSync(path, text);
        return text;
      };
      const startText = write([hourly("fixed-window"), KEPT]);
      const limiter = await openStore();
      const serving: Serving = { limiter, observer: undefined, agents: originAgents() };
      const server = await startServer({ ...runtimePartsOf(configOf(startText, path), serving), limiter, port: 0, token: TOKEN });
      const lines: LogLine[] = [];
      const reloader = configReloader(path, startText, serving, server, undefined, (line) => lines.push(line));
      const key = `reloaded-${process.pid}-${Date.now()}`;
      const check = async (policy: string) => {
        const response = await fetch(`${server.url}/v1/check`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ key, policy }) });
        await response.body?.cancel();
        return response.status;
      };
      const fiveThenDenied = async (policy: string) => {
        const statuses = [];
        for (let i = 0; i < 6; i++) statuses.push(await check(policy));
        return statuses;
      };
      try {
        expect(await fiveThenDenied("hourly")).toEqual([200, 200, 200, 200, 200, 429]);
        expect(await fiveThenDenied("kept")).toEqual([200, 200, 200, 200, 200, 429]);

        // A new limit under the same algorithm keeps the state: nothing starts fresh, and the line says nothing of it.
        write([hourly("fixed-window", 6), KEPT]);
        expect(await reloader.reload("signal")).toBe("ok");
        expect(lines.at(-1)).toMatchObject({ event: "config-reload", result: "ok", generation: 2 });
        expect(lines.at(-1)).not.toHaveProperty("startFresh");
        expect([await check("hourly"), await check("hourly")]).toEqual([200, 429]);

        // Another algorithm under the same name: the line names it, and its keys start fresh.
        write([hourly("sliding-window"), KEPT]);
        expect(await reloader.reload("signal")).toBe("ok");
        expect(lines.at(-1)).toMatchObject({ event: "config-reload", result: "ok", generation: 3, startFresh: [{ policy: "hourly", from: "fixed-window", to: "sliding-window" }] });
        expect(await fiveThenDenied("hourly")).toEqual([200, 200, 200, 200, 200, 429]);
        expect(await check("kept")).toBe(429);

        // Each reload compares with the config in force, not the first one.
        write([hourly("sliding-window"), { ...KEPT, algorithm: "token-bucket" }]);
        expect(await reloader.reload("signal")).toBe("ok");
        expect(lines.at(-1)).toMatchObject({ generation: 4, startFresh: [{ policy: "kept", from: "gcra", to: "token-bucket" }] });
        expect(await check("hourly")).toBe(429);
        expect(await check("kept")).toBe(200);
      } finally {
        await server.close(); // closes the store
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
