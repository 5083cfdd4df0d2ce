import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { LogLine } from "../../../../src/observe/log-lines.js";
import { originAgents } from "../../../../src/node/http/origin-agents.js";
import { type Serving, configOf, configReloader, runtimePartsOf } from "../../../../src/node/serve/serving.js";
import { startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { startWsOrigin } from "../../../conformance/ws-origin.js";

// `spillway serve`'s reload (SIGHUP, --watch) with allow keys scoped by key source
// (src/gateway/access.ts): a file in the old shape (a bare allow key) is refused naming the
// field and changes nothing; a scoped entry takes effect on the next request.

const policies = [{ name: "two", algorithm: "fixed-window", limit: 2, period: "1h" }];

describe("spillway serve reload: allow keys scoped by key source", () => {
  it("refuses a bare allow key (the config in force stays), then applies an entry for another source", async () => {
    const origin = await startWsOrigin();
    const dir = mkdtempSync(join(tmpdir(), "spillway-reload-access-"));
    const path = join(dir, "spillway.config.json");
    const write = (allowKeys: unknown[]) => {
      const routes = [
        { match: { path: "/user/*" }, key: "header:x-user", policies: ["two"] },
        { match: { path: "/key/*" }, key: "header:x-api-key", policies: ["two"] },
      ];
      const text = JSON.stringify({ origin: origin.url, policies, routes, allow: { keys: allowKeys } });
      writeFileSync(path, text);
      return text;
    };
    const startText = write([{ key: "vip", source: "header:x-api-key" }]);
    const limiter = new MemoryStore();
    const serving: Serving = { limiter, observer: undefined, agents: originAgents() };
    const server = await startServer({ ...runtimePartsOf(configOf(startText, path), serving), limiter, port: 0 });
    const lines: LogLine[] = [];
    const reloader = configReloader(path, startText, serving, server, undefined, (line) => lines.push(line));
    const send = async (route: string, headers: Record<string, string>) => {
      const response = await fetch(`${server.url}${route}`, { headers });
      await response.body?.cancel();
      return response.status;
    };
    const statuses = async (count: number, route: string, headers: Record<string, string>) => {
      const all = [];
      for (let i = 0; i < count; i++) all.push(await send(route, headers));
      return all;
    };
    try {
      expect(await statuses(3, "/user/a", { "x-user": "vip" })).toEqual([200, 200, 429]);
      expect(await statuses(3, "/key/a", { "x-api-key": "vip" })).toEqual([200, 200, 200]);

      write(["vip"]);
      expect(await reloader.reload("signal")).toBe("error");
      expect(lines.at(-1)).toMatchObject({ event: "config-reload", result: "error", generation: 1, field: "allow.keys.0" });
      expect(String(lines.at(-1)!.error)).toMatch(/^allow\.keys\.0: must name the key source it is for/);
      expect(await send("/user/a", { "x-user": "vip" })).toBe(429);
      expect(await send("/key/a", { "x-api-key": "vip" })).toBe(200);

      write([{ key: "vip", source: "header:x-user" }]);
      expect(await reloader.reload("signal")).toBe("ok");
      expect(lines.at(-1)).toMatchObject({ event: "config-reload", result: "ok", generation: 2 });
      expect(await statuses(3, "/user/a", { "x-user": "vip" })).toEqual([200, 200, 200]);
      // The API key lost its entry: counted from now on (what the list let through was never counted).
      expect(await statuses(3, "/key/a", { "x-api-key": "vip" })).toEqual([200, 200, 429]);
    } finally {
      await server.close(); // closes the store
      await origin.close();
      serving.agents["http:"].destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
