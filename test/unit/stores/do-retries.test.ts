import { describe, expect, it } from "vitest";
import { isRetryable, withRetries } from "../../../src/stores/durable-object.js";

const fast = { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 };
const flagged = (flags: { retryable?: boolean; overloaded?: boolean }) => Object.assign(new Error("durable object reset"), flags);

describe("Durable Object call retries", () => {
  it("retries only errors marked retryable and not overloaded", () => {
    expect(isRetryable(flagged({ retryable: true }))).toBe(true);
    expect(isRetryable(flagged({ retryable: true, overloaded: true }))).toBe(false);
    expect(isRetryable(flagged({}))).toBe(false);
    expect(isRetryable(new Error("plain"))).toBe(false);
    expect(isRetryable(null)).toBe(false);
  });

  it("succeeds after transient failures, within the attempt bound", async () => {
    let calls = 0;
    const result = await withRetries(async () => {
      calls++;
      if (calls < 3) throw flagged({ retryable: true });
      return "ok";
    }, fast);
    expect(result).toBe("ok");
    expect(calls).toBe(3);
  });

  it("gives up after the last attempt, with the last error", async () => {
    let calls = 0;
    const error = await withRetries(async () => {
      calls++;
      throw flagged({ retryable: true });
    }, fast).catch((thrown: unknown) => thrown);
    expect(calls).toBe(3);
    expect((error as Error).message).toBe("durable object reset");
  });

  it("never retries an overloaded object or a non-retryable error", async () => {
    for (const flags of [{ retryable: true, overloaded: true }, {}]) {
      let calls = 0;
      await withRetries(async () => {
        calls++;
        throw flagged(flags);
      }, fast).catch(() => undefined);
      expect(calls).toBe(1);
    }
  });
});
