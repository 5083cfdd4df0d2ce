import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import { createApp } from "../../src/http/app.js";
import { SpillwayService } from "../../src/service/service.js";
import { MemoryStore } from "../../src/stores/memory.js";
import { post, uniqueKey } from "./helpers.js";

const body = JSON.stringify({ key: "k", policy: "per-minute" });

describe("/v1 auth", () => {
  it("answers 401 problem+json for a wrong or missing token", async () => {
    for (const authorization of ["Bearer wrong-token", "Basic dGVzdA==", ""]) {
      const response = await exports.default.fetch("http://spillway.test/v1/check", { method: "POST", headers: { authorization }, body });
      expect(response.status, authorization).toBe(401);
      expect(response.headers.get("content-type")).toBe("application/problem+json");
      expect(await response.json()).toMatchObject({ status: 401, title: "Unauthorized" });
    }
  });

  it("answers 503 with how to set a token when none is configured", async () => {
    const service = new SpillwayService(new MemoryStore(), parseConfig({ policies: [] }));
    const app = createApp({ service, tokenOf: () => undefined });
    const response = await app.request("/v1/check", { method: "POST", headers: { authorization: "Bearer anything" }, body });
    expect(response.status).toBe(503);
    expect(((await response.json()) as { detail: string }).detail).toContain("SPILLWAY_TOKEN");
  });

  it("leaves /healthz open and accepts the right token", async () => {
    const health = await exports.default.fetch("http://spillway.test/healthz");
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true, store: "durable-object" });
    expect((await post("/v1/peek", { key: uniqueKey(), policy: "per-minute" })).status).toBe(200);
  });
});
