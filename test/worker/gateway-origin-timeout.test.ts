import { describe, expect, it } from "vitest";
import { ORIGIN_TIMEOUT_TYPE } from "../../src/core/wire.js";
import { gatewayApp, uniqueIp, uniqueUser } from "./gateway-helpers.js";

// An origin that never answers must not hold the client or its concurrency lease (kept in
// the Worker's real Durable Objects): 504 after originTimeoutMs, the origin request aborted.
const gw = gatewayApp({
  origin: "https://origin.test",
  originTimeoutMs: 200,
  policies: [{ name: "slot", algorithm: "concurrency", limit: 1, lease: "30s" }],
  routes: [{ match: { path: "/slot/*" }, key: "header:x-user", policies: ["slot"] }],
});

describe("Worker gateway: origin timeout", () => {
  it("answers 504 problem+json, aborts the origin request and releases the lease", async () => {
    const aborted: unknown[] = [];
    gw.origin.handler = (request) =>
      new Promise<Response>((_resolve, reject) => {
        // As fetch does: an aborted request rejects with the signal's reason.
        request.signal.addEventListener("abort", () => {
          aborted.push(request.signal.reason);
          reject(request.signal.reason);
        });
      });
    const user = uniqueUser();
    const response = await gw.send("/slot/a", { headers: { "x-user": user }, ip: uniqueIp() });
    expect(response.status).toBe(504);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(await response.json()).toMatchObject({ type: ORIGIN_TIMEOUT_TYPE, title: "Gateway Timeout", status: 504 });
    expect(aborted).toHaveLength(1);
    expect((aborted[0] as Error).name).toBe("OriginTimeoutError");

    gw.origin.handler = () => new Response("ok");
    const next = await gw.send("/slot/a", { headers: { "x-user": user }, ip: uniqueIp() });
    expect([next.status, await next.text()]).toEqual([200, "ok"]);
  });

  it("answers 504 even when the origin client ignores the abort", async () => {
    gw.origin.handler = () => new Promise<Response>(() => {});
    const response = await gw.send("/slot/b", { headers: { "x-user": uniqueUser() }, ip: uniqueIp() });
    expect(response.status).toBe(504);
  });
});
