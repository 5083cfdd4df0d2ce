import { afterAll, beforeAll, describe, it } from "vitest";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { refundCases, refundConfig, refundRefusals } from "./refund-http-cases.js";

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ config: refundConfig, limiter: new MemoryStore(), port: 0, token: "secret" });
});
afterAll(() => server.close());

const send = async (route: string, body: unknown) => {
  const response = await fetch(`${server.url}/v1/${route}`, { method: "POST", headers: { authorization: "Bearer secret", "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe("/v1/check refunds on spillway serve (memory)", () => {
  it("gives back by each algorithm's rule", () => refundCases(send, "memory"));
  it("refuses a negative cost without mode debit naming cost, and a concurrency stack naming mode", () => refundRefusals(send, "memory"));
});
