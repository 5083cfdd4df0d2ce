import { describe } from "../core/duration.js";

/**
 * Small named checks for factory options. Each throws a TypeError that names the option
 * and the bad value, so a mistake shows up where the client is built, not on first use.
 */

/** setTimeout cannot wait longer than 2^31 - 1 ms; longer waits would fire at once. */
export const MAX_TIMER_MS = 2_147_483_647;

const MAX_KEY_BYTES = 512;
const encoder = new TextEncoder();

export function integerOption(name: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(`${name}: must be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}

export function numberOption(name: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    throw new TypeError(`${name}: must be a number from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}

export function booleanOption(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw new TypeError(`${name}: must be true or false, got ${describe(value)}`);
  return value;
}

export function functionOption<F extends (...args: never[]) => unknown>(name: string, value: unknown, fallback: F | undefined): F | undefined {
  if (value === undefined) return fallback;
  if (typeof value !== "function") throw new TypeError(`${name}: must be a function, got ${describe(value)}`);
  return value as F;
}

/** A user key: 1 … 512 UTF-8 bytes (README "HTTP API"). */
export function keyOption(name: string, value: unknown): string {
  if (typeof value !== "string" || value.length === 0 || encoder.encode(value).length > MAX_KEY_BYTES) {
    throw new TypeError(`${name}: must be a string of 1 to ${MAX_KEY_BYTES} UTF-8 bytes, got ${describe(value)}`);
  }
  return value;
}

export function signalOption(name: string, value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || typeof (value as AbortSignal).aborted !== "boolean") {
    throw new TypeError(`${name}: must be an AbortSignal, got ${describe(value)}`);
  }
  return value as AbortSignal;
}

/**
 * Resolves after `ms` (setTimeout, so fake clocks drive it). Rejects with the signal's
 * reason as soon as it aborts, and clears the timer so nothing fires later.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.min(ms, MAX_TIMER_MS));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
