import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { type RunningServer, startServer } from "../../../src/node/serve/server.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { SpillwayService } from "../../../src/service/service.js";
import { type SpillwayBinding, bindingLimiter, createThrottle, httpLimiter, throttledFetch } from "../../../src/client/index.js";
import { TOKENS, throttleReserveCases } from "./throttle-reserve-cases.js";

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ config: parseConfig({ policies: [] }), limiter: new MemoryStore(), port: 0, token: "secret" });
});
afterAll(() => server.close());

describe("Throttle.reserve and settle", () => {
  it("on a MemoryStore", async () => {
    const store = new MemoryStore();
    await throttleReserveCases(store, "memory");
    await store.close();
  });

  it("through the HTTP API (a refund carries its spentAtMs)", async () => {
    await throttleReserveCases(httpLimiter({ url: server.url, token: "secret" }), "http");
  });

  it("through a service binding's RPC check", async () => {
    const service = new SpillwayService(new MemoryStore(), parseConfig({ policies: [] }));
    const binding = { check: async (request: unknown) => (await service.check(request)).decision, peek: async (request: unknown) => (await service.peek(request)).decision } as unknown as SpillwayBinding;
    await throttleReserveCases(bindingLimiter(binding), "binding");
  });
});

describe("throttledFetch with estimate and usage", () => {
  const TOKEN_POLICY = parsePolicy(TOKENS, "tokens");
  const chat = (body: Record<string, unknown>) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const maxTokens = async (request: Request) => ((await request.json()) as { max_tokens: number }).max_tokens;
  const totalTokens = async (response: Response) => ((await response.json()) as { usage?: { total_tokens?: number } }).usage?.total_tokens;

  it("reserves the request's estimate, settles the answer's usage, gives a retried attempt's back", async () => {
    const store = new MemoryStore();
    const throttle = createThrottle({ limiter: store, key: "llm", policy: TOKENS, maxWaitMs: 0 });
    const answers = [new Response("{}", { status: 429, headers: { "retry-after": "0" } }), Response.json({ usage: { total_tokens: 300 } })];
    const seen: number[] = [];
    const fetchApi = throttledFetch({
      throttle,
      retryNonIdempotent: true,
      estimate: maxTokens,
      usage: totalTokens,
      fetch: async () => {
        seen.push((await store.peek("llm", [TOKEN_POLICY])).remaining);
        return answers.shift()!;
      },
    });
    const answer = await fetchApi("https://llm.example/v1/chat/completions", chat({ max_tokens: 4000 }));
    // The caller reads the body as usual; the usage was read from a copy.
    expect(await answer.json()).toEqual({ usage: { total_tokens: 300 } });
    // Each attempt held its 4,000 while it ran; the refused one gave it back before the retry.
    expect(seen).toEqual([6000, 6000]);
    await vi.waitFor(async () => expect((await store.peek("llm", [TOKEN_POLICY])).remaining).toBe(9700));
    await store.close();
  });

  it("an answer without usage keeps its reservation; both options or neither, on a throttle", async () => {
    const store = new MemoryStore();
    const throttle = createThrottle({ limiter: store, key: "quiet", policy: TOKENS, maxWaitMs: 0 });
    const fetchApi = throttledFetch({ throttle, estimate: () => 2500, usage: totalTokens, fetch: async () => Response.json({ id: "no usage" }) });
    await (await fetchApi("https://llm.example/")).text();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await store.peek("quiet", [TOKEN_POLICY])).remaining).toBe(7500);
    expect(() => throttledFetch({ throttle, estimate: () => 1 })).toThrow("usage: reserve, then settle needs both estimate (what an attempt reserves) and usage (what settles it), got only estimate");
    expect(() => throttledFetch({ estimate: () => 1, usage: () => 1 })).toThrow("estimate: reserves on a throttle, got no throttle");
    await expect(throttledFetch({ throttle, estimate: () => -1, usage: () => 1, fetch: async () => new Response("") })("https://llm.example/")).rejects.toThrow("estimate: must be an integer from 1 to 1000000000, got -1");
    await store.close();
  });
});
