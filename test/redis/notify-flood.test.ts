import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { parseConfig } from "../../src/config/config.js";
import { parsePolicy } from "../../src/core/policy.js";
import { serveNotify } from "../../src/node/serve/notify.js";
import type { Notice } from "../../src/notify/notifier.js";
import { RedisStore } from "../../src/stores/redis/store.js";

// Issue 45, attack 5, on Redis: a notice one process's full queue drops gives its claim back
// in Redis, so the key's next decision in the window, on any process, sends it.
const REJECT = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const monthly = parsePolicy({ name: "monthly", algorithm: "fixed-window", limit: 2, period: "1h", warnAt: 0.5 }, "policy");

describe("a flood fills one process's notice queue (Redis shared by two)", () => {
  let redis: RedisServer;
  let server: http.Server;
  const notices: Notice[] = [];
  /** The webhook holds the first process's POSTs (its queue stays full) and answers the rest. */
  const held: http.ServerResponse[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        const notice = JSON.parse(body) as Notice;
        if (notice.key.startsWith("flood-")) return void held.push(res);
        notices.push(notice);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    for (const res of held) res.writeHead(204).end();
    server.closeAllConnections();
    await Promise.all([new Promise((resolve) => server.close(resolve)), redis?.stop()]);
  });

  it("the dropped warning is sent by the key's next decision, from the other process", async () => {
    const config = parseConfig({ policies: [], notify: { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, events: ["warning"] } });
    const stores = [new RedisStore({ url: redis.url, keyPrefix: "flood:" }), new RedisStore({ url: redis.url, keyPrefix: "flood:" })];
    const lines: string[] = [];
    const first = serveNotify(stores[0]!, config, (line) => lines.push(line));
    const second = serveNotify(stores[1]!, config, () => {});
    try {
      // 4 POSTs held under way, 1,000 waiting: the first process's queue is full.
      for (let i = 0; i < 1010; i++) await first.limiter.check(`flood-${i}`, [monthly], REJECT);
      const deadline = Date.now() + 10_000;
      while (lines.length < 6 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      await first.limiter.check("acme", [monthly], REJECT);
      while (!lines.some((line) => line.includes('"key":"acme"')) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(JSON.parse(lines.find((line) => line.includes('"key":"acme"'))!)).toMatchObject({ event: "notify-dropped", key: "acme", claim: "given back" });
      await second.limiter.check("acme", [monthly], REJECT);
      while (notices.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(notices.map((notice) => [notice.event, notice.key, notice.remaining])).toEqual([["warning", "acme", 0]]);
    } finally {
      first.close();
      second.close();
      await Promise.all(stores.map((store) => store.close()));
    }
  }, 30_000);
});
