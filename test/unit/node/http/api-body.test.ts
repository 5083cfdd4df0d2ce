import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { MAX_BODY_BYTES } from "../../../../src/http/api.js";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

const config = parseConfig({ policies: [{ name: "two", algorithm: "fixed-window", limit: 2, period: "1h" }] });

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * POSTs `chunks` to /v1/check over a real socket: with Content-Length (their total) when
 * `declared`, else chunked (Transfer-Encoding: chunked, no length up front).
 */
function post(url: string, chunks: string[], declared: boolean): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: "Bearer secret", "content-type": "application/json" };
    if (declared) headers["content-length"] = String(Buffer.byteLength(chunks.join("")));
    const req = request(`${url}/v1/check`, { method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) as Record<string, unknown> }));
    });
    // A refused upload may be cut short by the server: what counts is the answer.
    req.on("error", reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe("/v1 request bodies on Node", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ config, limiter: new MemoryStore(), port: 0, token: "secret" });
  });
  afterAll(() => server.close());

  const body = (key: string, padBytes = 0) => JSON.stringify({ key, policy: "two", ...(padBytes ? { pad: "x".repeat(padBytes) } : {}) });

  it("decides a body of declared length, and one sent in chunks of undeclared length", async () => {
    const declared = await post(server.url, [body("declared")], true);
    expect([declared.status, declared.body.remaining]).toEqual([200, 1]);
    const text = body("chunked");
    const chunked = await post(server.url, [text.slice(0, 5), text.slice(5, 20), text.slice(20)], false);
    expect([chunked.status, chunked.body.remaining]).toEqual([200, 1]);
  });

  it("refuses a declared length over the limit with a 413, before deciding anything", async () => {
    const answer = await post(server.url, [body("big-declared", MAX_BODY_BYTES)], true);
    expect(answer.status).toBe(413);
    expect(answer.body.detail).toBe(`the body is over ${MAX_BODY_BYTES} bytes`);
    expect((await post(server.url, [body("big-declared")], true)).body.remaining).toBe(1);
  });

  it("refuses a chunked body once it passes the limit, and one exactly at the limit is read", async () => {
    const chunk = "x".repeat(16 * 1024);
    const over = await post(server.url, [`{"key":"big-chunked","policy":"two","pad":"`, ...Array.from({ length: 5 }, () => chunk), `"}`], false);
    expect(over.status).toBe(413);
    expect((await post(server.url, [body("big-chunked")], false)).body.remaining).toBe(1);
    // Exactly MAX_BODY_BYTES: within the limit, so it reaches validation (pad is no field: a 400 naming it).
    const prefix = `{"key":"at-limit","policy":"two","pad":"`;
    const exact = prefix + "x".repeat(MAX_BODY_BYTES - prefix.length - 2) + `"}`;
    expect(Buffer.byteLength(exact)).toBe(MAX_BODY_BYTES);
    const atLimit = await post(server.url, [exact.slice(0, 30_000), exact.slice(30_000)], false);
    expect([atLimit.status, atLimit.body.field]).toEqual([400, "pad"]);
  });
});
