import type { UsageWarnings } from "../http/counting.js";
import { BoundedTap, type TapDecoding } from "./body-tap.js";
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
 * once, when the body ends, within BoundedTap's bounds (body-tap.ts): a read cut before the
 * body's end costs every token measure at least `missing`.
 */
export class PresetTap extends BoundedTap<PresetReader> {
  readonly #context: PresetTapContext;

  constructor(reader: PresetReader, context: PresetTapContext, encoding: TapDecoding | undefined) {
    super(reader, context.limits, encoding);
    this.#context = context;
  }

  end(): void {
    const finished = this.finished();
    if (!finished) return;
    const { reader, cutBy } = finished;
    const { cost, field, warnings } = this.#context;
    const cut = cutBy !== undefined;
    const read = reader.finish();
    const { charges, unread } = chargesOf(read.usage, cost, cut);
    if (cut) warnings.warn(field, { route: field, reason: `the answer was read up to ${cutBy}`, charges });
    else if (unread) warnings.warn(field, { route: field, reason: read.reason ?? `the answer did not report ${unread} (${cost.preset})`, charges });
    this.#context.charge(charges);
  }
}
