import { describe, expect, it } from "vitest";
import { goDuration, providerFields, retryAfterMsOf, rfc3339After } from "../../../src/core/provider-headers.js";
import type { Decision } from "../../../src/core/types.js";

// The providers' own rate-limit fields (docs/gateway.md, "Provider headers").
const decision = (allowed: boolean): Decision => ({
  allowed,
  policy: "rpm",
  limit: 60,
  remaining: 0,
  resetMs: 360_000,
  retryAfterMs: allowed ? 0 : 1500,
  waitMs: 0,
  policies: [
    { policy: "rpm", allowed, limit: 60, remaining: allowed ? 12 : 0, resetMs: 360_000, retryAfterMs: allowed ? 0 : 1500 },
    { policy: "tpm", allowed: true, limit: 40_000, remaining: 18_000, resetMs: 20, retryAfterMs: 0 },
  ],
});

describe("provider headers", () => {
  it("Go's duration form, as OpenAI writes its resets", () => {
    expect([0, 20, 999, 1000, 1500, 34_000, 360_000, 3_723_000, 7_200_000].map(goDuration)).toEqual(["0s", "20ms", "999ms", "1s", "1.5s", "34s", "6m0s", "1h2m3s", "2h0m0s"]);
  });

  it("openai: requests and tokens from the policies named", () => {
    expect(providerFields(decision(true), { style: "openai", requests: "rpm", tokens: "tpm" })).toEqual({
      "x-ratelimit-limit-requests": "60",
      "x-ratelimit-remaining-requests": "12",
      "x-ratelimit-reset-requests": "6m0s",
      "x-ratelimit-limit-tokens": "40000",
      "x-ratelimit-remaining-tokens": "18000",
      "x-ratelimit-reset-tokens": "20ms",
    });
  });

  it("anthropic: resets in RFC 3339, whole seconds rounded up; a family whose policy the decision lacks is left out", () => {
    const now = Date.UTC(2026, 11, 7, 1, 0, 0, 400);
    expect(providerFields(decision(true), { style: "anthropic", requests: "rpm", tokens: "tpm", inputTokens: "itpm" }, now)).toEqual({
      "anthropic-ratelimit-requests-limit": "60",
      "anthropic-ratelimit-requests-remaining": "12",
      "anthropic-ratelimit-requests-reset": "2026-12-07T01:06:01Z",
      "anthropic-ratelimit-tokens-limit": "40000",
      "anthropic-ratelimit-tokens-remaining": "18000",
      "anthropic-ratelimit-tokens-reset": "2026-12-07T01:00:01Z",
    });
    expect(rfc3339After(Date.UTC(2026, 0, 1), 0)).toBe("2026-01-01T00:00:00Z");
  });

  it("a denial carries retry-after-ms, the exact wait; none when it can never pass", () => {
    expect(providerFields(decision(false), { style: "openai", requests: "rpm" })["retry-after-ms"]).toBe("1500");
    expect(retryAfterMsOf({ ...decision(false), retryAfterMs: null })).toBeUndefined();
    expect(retryAfterMsOf(decision(true))).toBeUndefined();
  });
});
