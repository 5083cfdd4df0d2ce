import { describe, expect, it } from "vitest";
import { authRefusal, constantTimeEqual } from "../../../src/http/auth.js";

describe("constantTimeEqual (the /v1 token comparison)", () => {
  it("is equality of the two strings, whatever their lengths and characters", () => {
    const samples = ["", "a", "b", "ab", "ba", "abc", "secret", "secreT", "secret ", "sécret", "s\u00e9cret", "se\u0301cret", "🔑", "🔒", "x🔑", "secretsecret"];
    for (const given of samples) for (const expected of samples) expect(constantTimeEqual(given, expected), `${given} vs ${expected}`).toBe(given === expected);
  });

  it("refuses a token that is a prefix, an extension or a repetition of the right one", () => {
    for (const given of ["sec", "secret2", "secretsecret", "s", ""]) expect(authRefusal("secret", `Bearer ${given}`)?.problem.status, given).toBe(401);
    expect(authRefusal("secret", "Bearer secret")).toBeUndefined();
  });
});
