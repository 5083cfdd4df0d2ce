import { afterEach, describe, expect, it, vi } from "vitest";
import { StoreFaultError, StoreUnavailableError } from "../../../src/core/limiter.js";
import { type LogLine, STORE_ERROR_LOG_INTERVAL_MS, StoreErrorLog, logObserver } from "../../../src/observe/log-lines.js";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("store-error log lines are rate-limited, one JSON line each, no stack", () => {
  it("logs the first error of a kind, counts the rest for the interval, then says how many it left out", () => {
    const lines: LogLine[] = [];
    const clock = { nowMs: 1_700_000_000_000 };
    const log = new StoreErrorLog((line) => lines.push(line), { nowMs: () => clock.nowMs });
    for (let i = 0; i < 100; i++) {
      log.report("fault", { error: "StoreFaultError: OOM" });
      clock.nowMs += 10;
    }
    log.report("unavailable", { error: "down" });
    expect(lines.map((line) => [line.kind, line.suppressed])).toEqual([["fault", undefined], ["unavailable", undefined]]);
    clock.nowMs += STORE_ERROR_LOG_INTERVAL_MS;
    log.report("fault", { error: "StoreFaultError: OOM" });
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ spillway: true, event: "store-error", kind: "fault", suppressed: 99, error: "StoreFaultError: OOM" });
  });

  it("the log observer writes a store error as one line without its stack", () => {
    const lines: LogLine[] = [];
    const observer = logObserver((line) => lines.push(line));
    const error = new StoreFaultError("redis single failed: OOM command not allowed", { cause: new Error("inner") });
    for (let i = 0; i < 20; i++) observer.storeError!({ store: "redis", kind: "fault", operation: "check", source: "api", key: "k", error });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ kind: "fault", operation: "check", key: "k", error: "StoreFaultError: redis single failed: OOM command not allowed" });
    expect(JSON.stringify(lines[0])).not.toContain("    at ");
  });

  it("the HTTP error path logs store errors as rate-limited JSON lines, never console.error with a stack", async () => {
    // The default log's interval is module state: a fresh instance of the modules, whatever an
    // earlier file in this worker reported (the unit project does not isolate files).
    vi.resetModules();
    const { loggedProblem } = await import("../../../src/http/problems.js");
    const { StoreFaultError, StoreUnavailableError } = await import("../../../src/core/limiter.js");
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
    const logged = vi.spyOn(console, "log").mockImplementation(() => {});
    for (let i = 0; i < 50; i++) {
      expect(loggedProblem(new StoreFaultError("redis check failed: READONLY")).status).toBe(503);
      expect(loggedProblem(new StoreUnavailableError("redis check did not answer within 50 ms")).status).toBe(503);
    }
    expect(errors).not.toHaveBeenCalled();
    expect(warnings).not.toHaveBeenCalled();
    // One line per kind: 100 errors, 2 lines.
    expect(logged.mock.calls.length).toBe(2);
    for (const [line] of logged.mock.calls) expect(JSON.parse(String(line))).toMatchObject({ spillway: true, event: "store-error", status: 503 });
    // A bug is still logged with its stack.
    loggedProblem(new TypeError("boom"));
    expect(errors).toHaveBeenCalledTimes(1);
  });
});
