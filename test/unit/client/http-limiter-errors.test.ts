import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { httpLimiter } from "../../../src/client/index.js";
import { parseConfig } from "../../../src/config/config.js";
import { thrownMessage } from "../core/thrown-message.js";

// httpLimiter's errors as a newcomer meets them (issue 45, newcomer 6): they name httpLimiter and
// SPILLWAY_TOKEN, and an unreachable server says its address and the cause's code.

const catalog = parseConfig({ policies: [{ name: "per-minute", limit: 10, period: "1m" }] }).catalog;
const message = thrownMessage;

describe("httpLimiter", () => {
  it("names itself and SPILLWAY_TOKEN", () => {
    expect(message(() => httpLimiter({ url: "http://127.0.0.1:8787", token: undefined as never }))).toBe("httpLimiter: token: must be a non-empty string (the server's SPILLWAY_TOKEN), got nothing");
    expect(message(() => httpLimiter({ url: "127.0.0.1:8787", token: "t" }))).toBe('httpLimiter: url: must be an http(s) URL, got "127.0.0.1:8787"');
  });

  it("an unreachable server: the address and the cause's code, not a bare 'fetch failed'", async () => {
    // A port just freed: nothing listens there, so the connection is refused.
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const limiter = httpLimiter({ url: `http://127.0.0.1:${port}`, token: "t" });
    await expect(limiter.check("k", [catalog.get("per-minute")!], { cost: 1, mode: "reject", maxWaitMs: 0 })).rejects.toThrow(
      `limiter at 127.0.0.1:${port} unreachable: fetch failed (ECONNREFUSED 127.0.0.1:${port})`,
    );
  });
});

