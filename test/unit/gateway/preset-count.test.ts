import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { AnswerCount } from "../../../src/gateway/answer-count.js";
import { parseGatewayConfig } from "../../../src/gateway/config.js";
import type { Charges } from "../../../src/gateway/measures.js";
import { UsageWarnings } from "../../../src/http/counting.js";

// A usage preset's answer count (answer-count.ts, preset-tap.ts) without a network: what is
// charged when the origin never answers, when a status is not counted, and when a read is cut.
const policies = [
  { name: "itpm", algorithm: "token-bucket", limit: 10_000, period: "1m" },
  { name: "otpm", algorithm: "token-bucket", limit: 5000, period: "1m" },
];
const counting = (extra: Record<string, unknown> = {}) =>
  parseGatewayConfig(
    parseConfig({ origin: "https://api.example.com", policies, routes: [{ match: { path: "/*" }, key: "ip", policies: ["itpm", "otpm"], cost: { usage: "anthropic", measures: { itpm: "input", otpm: "output" }, max: 3000, maxReadBytes: 1024 }, ...extra }] }),
  )!.routes[0]!.counting!;

function counted(extra: Record<string, unknown> = {}) {
  const charged: Charges[] = [];
  const logs: Record<string, unknown>[] = [];
  const count = new AnswerCount({
    counting: counting(extra),
    field: "routes.0",
    warnings: new UsageWarnings((entry) => logs.push(entry)),
    settle: () => ({}),
    before: { RateLimit: "before" },
    requestCost: undefined,
    charge: (charges) => void charged.push(charges),
  });
  return { count, charged, logs };
}
const header = (fields: Record<string, string>) => (name: string) => fields[name] ?? null;
const noDefer = () => {};

describe("a usage preset's answer count", () => {
  it("an origin that never answered after the client left: every token measure missing (max)", () => {
    const { count, charged, logs } = counted();
    count.abandoned(noDefer);
    expect(charged).toEqual([{ input: 3000, output: 3000, total: 3000, requests: 1, microdollars: 0 }]);
    expect(logs[0]).toMatchObject({ event: "usage-unusable", reason: expect.stringContaining("maxReadMs") });
  });

  it("a status the route does not count: no tap, nothing charged, the fields before", () => {
    const { count, charged } = counted({ count: { status: [200] } });
    const answer = count.answered(500, header({ "content-type": "application/json" }), noDefer);
    expect(answer.tap).toBeUndefined();
    expect(answer.extra).toEqual({ RateLimit: "before" });
    expect(charged).toEqual([]);
  });

  it("a read cut at maxReadBytes after the client left costs every token measure at least missing", () => {
    const { count, charged } = counted();
    const { tap } = count.answered(200, header({ "content-type": "text/event-stream" }), noDefer);
    tap!.push(new TextEncoder().encode('event: message_start\ndata: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":25,"output_tokens":1}}}\n\n'));
    tap!.clientGone();
    tap!.push(new Uint8Array(2048));
    expect(tap!.done).toBe(true);
    tap!.end();
    expect(charged).toEqual([{ input: 3000, output: 3000, total: 3000, requests: 1, microdollars: 0 }]);
  });

  it("a JSON answer is done once its usage and model are read; charged once however often end is called", () => {
    const { count, charged } = counted();
    const { tap } = count.answered(200, header({ "content-type": "application/json" }), noDefer);
    tap!.push(new TextEncoder().encode('{"model":"claude","usage":{"input_tokens":40,"output_tokens":7},"content":['));
    expect(tap!.done).toBe(true);
    tap!.end();
    tap!.end();
    expect(charged).toEqual([{ input: 40, output: 7, total: 47, requests: 1, microdollars: 0 }]);
  });
});
