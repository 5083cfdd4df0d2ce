import { describeValue } from "../core/validation.js";
import { sleep } from "../core/sleep.js";
import { MAX_KEY_BYTES, keyFitsBytes } from "../core/wire.js";

/**
 * Small named checks for factory options. Each throws a TypeError that names the option
 * and the bad value, so a mistake shows up where the client is built, not on first use.
 */

export function integerOption(name: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(`${name}: must be an integer from ${min} to ${max}, got ${describeValue(value)}`);
  }
  return value;
}

export function numberOption(name: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    throw new TypeError(`${name}: must be a number from ${min} to ${max}, got ${describeValue(value)}`);
  }
  return value;
}

export function booleanOption(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw new TypeError(`${name}: must be true or false, got ${describeValue(value)}`);
  return value;
}

export function functionOption<F extends (...args: never[]) => unknown>(name: string, value: unknown, fallback: F | undefined): F | undefined {
  if (value === undefined) return fallback;
  if (typeof value !== "function") throw new TypeError(`${name}: must be a function, got ${describeValue(value)}`);
  return value as F;
}

/** A user key: 1 … 512 UTF-8 bytes (README "HTTP API"). */
export function keyOption(name: string, value: unknown): string {
  if (typeof value !== "string" || value.length === 0 || !keyFitsBytes(value)) {
    throw new TypeError(`${name}: must be a string of 1 to ${MAX_KEY_BYTES} UTF-8 bytes, got ${describeValue(value)}`);
  }
  return value;
}

export function signalOption(name: string, value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || typeof (value as AbortSignal).aborted !== "boolean") {
    throw new TypeError(`${name}: must be an AbortSignal, got ${describeValue(value)}`);
  }
  return value as AbortSignal;
}

/** Resolves after `ms`; rejects with the signal's reason as soon as it aborts (core sleep does the timing). */
export async function sleepOrThrow(ms: number, signal?: AbortSignal): Promise<void> {
  if (!(await sleep(ms, signal))) throw signal!.reason;
}
