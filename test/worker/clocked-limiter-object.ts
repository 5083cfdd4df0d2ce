import { LimiterObject } from "../../src/worker/limiter-object.js";

/**
 * The real LimiterObject on a clock the test sets: the conformance table's injected time.
 * Real alarms would fire at meaningless moments on such a clock, so none are scheduled.
 */
export class ClockedLimiterObject extends LimiterObject {
  private clockMs = 0;

  setClockMs(ms: number): void {
    this.clockMs = ms;
  }

  protected override nowMs(): number {
    return this.clockMs;
  }

  protected override scheduleAlarm(): Promise<void> {
    return Promise.resolve();
  }
}
