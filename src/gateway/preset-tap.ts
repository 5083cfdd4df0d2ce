import type { UsageWarnings } from "../http/counting.js";
import type { BodyTap, TapDecoding } from "./body-tap.js";
import type { ReadLimits } from "./counting.js";
import { type Charges, type UsageCost, chargesOf } from "./measures.js";
import type { PresetReader } from "./usage-presets.js";

/** Where a preset tap reports: the route's cost, the log, and how every measure is charged. */
export interface PresetTapContext {
  cost: UsageCost;
  limits: ReadLimits;
  field: string;
  warnings: UsageWarnings;
  charge: (charges: Charges) => void;
}

/**
 * A usage preset's tap (usage-presets.ts): fed the body as it passes, it charges every measure
 * once, when the body ends. It bounds what the gateway reads on its own account (bytes decoded
 * for it, bytes read after the client left) as UsageTap does (answer-count.ts): past
 * `limits.bytes` it is cut, and a cut read costs every token measure at least `missing`.
 */
export class PresetTap implements BodyTap {
  readonly encoding?: TapDecoding;
  readonly limits: ReadLimits;
  #reader: PresetReader | undefined;
  readonly #context: PresetTapContext;
  #gone = false;
  #ownBytes = 0;
  #cutBy: string | undefined;

  constructor(reader: PresetReader, context: PresetTapContext, encoding: TapDecoding | undefined) {
    if (encoding) this.encoding = encoding;
    this.limits = context.limits;
    this.#reader = reader;
    this.#context = context;
  }

  get done(): boolean {
    return this.#cutBy !== undefined || (this.#reader?.done ?? true);
  }

  push(chunk: Uint8Array): void {
    const reader = this.#reader;
    if (!reader || this.done) return;
    if (this.encoding || this.#gone) {
      this.#ownBytes += chunk.byteLength;
      if (this.#ownBytes > this.limits.bytes) return this.cut(`maxReadBytes (${this.limits.bytes})`);
    }
    reader.push(chunk);
  }

  clientGone(): void {
    this.#gone = true;
  }

  cut(why: string): void {
    this.#cutBy ??= why;
  }

  end(): void {
    const reader = this.#reader;
    if (!reader) return;
    this.#reader = undefined;
    const { cost, field, warnings } = this.#context;
    const cut = this.#cutBy !== undefined && !reader.done;
    const read = reader.finish();
    const { charges, unread } = chargesOf(read.usage, cost, cut);
    if (cut) warnings.warn(field, { route: field, reason: `the answer was read up to ${this.#cutBy}`, charges });
    else if (unread) warnings.warn(field, { route: field, reason: read.reason ?? `the answer did not report ${unread} (${cost.preset})`, charges });
    this.#context.charge(charges);
  }
}
