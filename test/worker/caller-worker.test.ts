import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import caller, { type Env } from "../../examples/caller-worker/src/index.js";
import { TOKEN } from "./helpers.js";

// The example caller Worker, with its SPILLWAY service binding pointed at the Worker under
// test's SpillwayRpc entrypoint (a real loopback service binding inside workerd).
// "refill" is the bundled token bucket: 6 tokens, all refilled every 3 s.
const env: Env = { SPILLWAY: exports.SpillwayRpc, SPILLWAY_TOKEN: TOKEN, SPILLWAY_POLICY: "refill" };
const call = (path: string) => caller.fetch(new Request(`https://caller.test${path}`), env);
const user = () => `u-${crypto.randomUUID()}`;

describe("example caller Worker over a service binding", () => {
  for (const [via, path] of [["rpc", "/"], ["fetch", "/via-fetch"]] as const) {
    it(`limits its users through Spillway by ${via}`, async () => {
      const name = user();
      for (let i = 0; i < 6; i++) {
        const response = await call(`${path}?user=${name}`);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ hello: name, via, remaining: 5 - i });
      }
      const denied = await call(`${path}?user=${name}`);
      expect(denied.status).toBe(429);
      expect(Number(denied.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(await denied.json()).toEqual({ error: "slow down", via });
    });
  }

  it("shares one budget between the two paths (same key, same policy)", async () => {
    const name = user();
    for (let i = 0; i < 3; i++) await call(`/?user=${name}`);
    expect(await (await call(`/via-fetch?user=${name}`)).json()).toMatchObject({ remaining: 2 });
  });

  it("the fetch path needs Spillway's token; RPC does not (no token, the binding is the capability)", async () => {
    const noToken: Env = { ...env, SPILLWAY_TOKEN: "wrong" };
    const refused = await caller.fetch(new Request(`https://caller.test/via-fetch?user=${user()}`), noToken);
    expect(refused.status).toBe(502);
    expect(await refused.json()).toMatchObject({ error: expect.stringContaining("spillway answered 401") });
    expect((await caller.fetch(new Request(`https://caller.test/?user=${user()}`), noToken)).status).toBe(200);
  });
});
