import { describe, expect, it } from "vitest";
import { post } from "./helpers.js";

const policy = { name: "p", algorithm: "gcra", limit: 10, period: "1m" };

/** Each bad body and the field its 400 must name. */
const badBodies: Array<[label: string, body: unknown, field: string]> = [
  ["negative cost", { key: "k", policy, cost: -1 }, "cost"],
  ["fractional cost", { key: "k", policy, cost: 1.5 }, "cost"],
  ["huge cost", { key: "k", policy, cost: 1e12 }, "cost"],
  ["string cost", { key: "k", policy, cost: "NaN" }, "cost"],
  ["empty key", { key: "", policy }, "key"],
  ["513-byte key", { key: "x".repeat(513), policy }, "key"],
  ["multi-byte key over 512 bytes", { key: "é".repeat(257), policy }, "key"],
  ["missing key", { policy }, "key"],
  ["numeric key", { key: 7, policy }, "key"],
  ["missing policy", { key: "k" }, "policy"],
  ["unknown algorithm", { key: "k", policy: { ...policy, algorithm: "leaky" } }, "policy.algorithm"],
  ["zero period", { key: "k", policy: { ...policy, period: 0 } }, "policy.period"],
  ["bad period text", { key: "k", policy: { ...policy, period: "soon" } }, "policy.period"],
  ["negative limit", { key: "k", policy: { ...policy, limit: -1 } }, "policy.limit"],
  ["bad policy name", { key: "k", policy: { ...policy, name: "Bad Name" } }, "policy.name"],
  ["unknown policy field", { key: "k", policy: { ...policy, limt: 3 } }, "policy.limt"],
  ["bad mode", { key: "k", policy, mode: "maybe" }, "mode"],
  ["negative maxWaitMs", { key: "k", policy, maxWaitMs: -5 }, "maxWaitMs"],
  ["unknown body field", { key: "k", policy, costs: 2 }, "costs"],
  ["array body", [1, 2], "body"],
  ["stacked duplicate", { key: "k", policy: [policy, policy] }, "policy.1"],
];

describe("bad input answers 400 problem+json naming the field", () => {
  it.each(badBodies)("%s", async (_label, body, field) => {
    const response = await post("/v1/check", body);
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    const problem = (await response.json()) as { field: string; detail: string; status: number };
    expect(problem.status).toBe(400);
    expect(problem.field).toBe(field);
    expect(problem.detail.startsWith(`${field}:`)).toBe(true);
  });

  it("a non-JSON body", async () => {
    const response = await post("/v1/check", "{not json");
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ field: "body" });
  });

  it("an unknown policy name is a 404 naming it", async () => {
    const response = await post("/v1/check", { key: "k", policy: "no-such-policy" });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { detail: string }).detail).toContain("no-such-policy");
  });

  it("a body over 64 KiB is a 413", async () => {
    const response = await post("/v1/check", JSON.stringify({ key: "k", policy, pad: "x".repeat(70_000) }));
    expect(response.status).toBe(413);
  });

  it("a streamed body of undeclared length is a 413 once past 64 KiB, and decided below it", async () => {
    const stream = (text: string, chunkBytes: number) => {
      const bytes = new TextEncoder().encode(text);
      let offset = 0;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (offset >= bytes.length) return controller.close();
          controller.enqueue(bytes.slice(offset, (offset += chunkBytes)));
        },
      });
    };
    const over = await post("/v1/check", stream(JSON.stringify({ key: "k", policy, pad: "x".repeat(70_000) }), 8192));
    expect(over.status).toBe(413);
    const under = await post("/v1/check", stream(JSON.stringify({ key: "streamed", policy }), 7));
    expect(under.status).toBe(200);
  });

  it("lease routes refuse rate policies, naming the field", async () => {
    const response = await post("/v1/acquire", { key: "k", policy });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ field: "policy" });
  });
});
