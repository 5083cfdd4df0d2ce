import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createWorker } from "../../src/worker/index.js";
import { gatewayApp, uniqueIp, uniqueUser } from "./gateway-helpers.js";

// Worker-only key sources (request.cf) and SPILLWAY_DRY_RUN read from the Worker's env.

describe("Worker gateway: cf: keys", () => {
  const gw = gatewayApp({
    origin: "https://origin.test",
    policies: [{ name: "per-place", algorithm: "fixed-window", limit: 2, period: "1h" }],
    routes: [{ match: { path: "/geo/*" }, key: ["cf:country", "cf:asn", "header:x-user"], policies: ["per-place"] }],
  });
  const send = (cf: Record<string, unknown> | undefined, user: string) => gw.send("/geo/a", { ip: uniqueIp(), headers: { "x-user": user }, cf } as RequestInit & { ip: string });

  it("keys by request.cf's country and asn joined with the header; another country is another key", async () => {
    const user = uniqueUser();
    const nz = { country: "NZ", asn: 64_500, colo: "AKL" };
    expect([(await send(nz, user)).status, (await send(nz, user)).status, (await send(nz, user)).status]).toEqual([200, 200, 429]);
    expect((await send({ ...nz, country: "AU" }, user)).status).toBe(200);
  });

  it("a request without request.cf is missing a part: 400 naming it", async () => {
    const response = await send(undefined, uniqueUser());
    expect(response.status).toBe(400);
    expect(((await response.json()) as { detail: string }).detail).toMatch(/does not carry request\.cf\.country/);
  });
});

describe("SPILLWAY_DRY_RUN on the Worker", () => {
  // createWorker's gateway reaches its origin with the global fetch: a stand-in answers 200 here.
  const realFetch = globalThis.fetch;
  // createWorker takes no log option: its gateway logs with console.log, so lines land here
  // instead of the test output, where the dry-run test reads them.
  const logged: string[] = [];
  let consoleLog: { mockRestore(): void } | undefined;
  beforeAll(() => {
    globalThis.fetch = async (input: RequestInfo | URL) => (new URL(input instanceof Request ? input.url : input).host === "origin.test" ? new Response("ok") : realFetch(input));
    consoleLog = vi.spyOn(console, "log").mockImplementation((line: unknown) => void logged.push(String(line)));
  });
  afterAll(() => {
    globalThis.fetch = realFetch;
    consoleLog?.mockRestore();
  });
  const dryRunDenials = () => logged.filter((line) => line.includes('"event":"dry-run-deny"')).length;
  const config = {
    origin: "https://origin.test",
    policies: [{ name: "one", algorithm: "fixed-window", limit: 1, period: "1h" }],
    routes: [{ match: { path: "/dry/*" }, key: "header:x-user", policies: ["one"] }],
  };
  async function statuses(workerEnv: unknown, worker = createWorker(config)): Promise<number[]> {
    const user = uniqueUser();
    const result: number[] = [];
    for (let i = 0; i < 2; i++) {
      const ctx = createExecutionContext();
      const response = await worker.fetch(new Request("http://gw.test/dry/a", { headers: { "x-user": user } }), workerEnv as never, ctx);
      await waitOnExecutionContext(ctx);
      result.push(response.status);
      await response.text();
    }
    return result;
  }

  it("puts every route in dry-run: the second request is forwarded, not refused", async () => {
    expect(await statuses(env)).toEqual([200, 429]);
    expect(await statuses({ ...env, SPILLWAY_DRY_RUN: "1" })).toEqual([200, 200]);
    expect(await statuses({ ...env, SPILLWAY_DRY_RUN: "0" })).toEqual([200, 429]);
    expect(await statuses(env, createWorker({ ...config, dryRun: true }))).toEqual([200, 200]);
    // Each dry-run pass logged the refusal it let through; the enforcing passes logged none.
    expect(dryRunDenials()).toBe(2);
  });

  it("refuses a value that is neither on nor off, naming the variable", async () => {
    const answering = createWorker(config).fetch(new Request("http://gw.test/dry/a"), { ...env, SPILLWAY_DRY_RUN: "yes" } as never, createExecutionContext());
    await expect(answering).rejects.toThrow(/^SPILLWAY_DRY_RUN: must be "1" or "true"/);
  });
});
