import { type CostBounds, type UsageWarnings, headerCost, reportedCost, statusMatches } from "../http/counting.js";
import type { Settle } from "../http/count-limit.js";
import type { HeaderLookup } from "./keys.js";
import type { CostSource, ReadLimits, RouteCounting } from "./counting.js";
import type { BodyBytes, BodyTap, TapDecoding } from "./body-tap.js";
import { BoundedTap, TAP_DECODINGS } from "./body-tap.js";
import { type UsageReader, usageReader } from "./usage.js";
import { type Charges, chargesOf } from "./measures.js";
import { PresetTap } from "./preset-tap.js";
import { presetReader } from "./usage-presets.js";

/**
 * What a counted route does when the origin's answer head arrives (docs/gateway.md, "Counting
 * what the origin answers"): an unmatched status costs nothing; a matched one is debited its
 * cost. A cost known at the head (a constant, a request or answer header) is debited before
 * the head goes out, so its RateLimit fields show the state after the debit, except on a store
 * that carries debits (the Durable Object: `carries`), where it rides with the key's next
 * request like a body's and the head shows the state before (SPEC §5); a cost in the body is
 * read as the body streams past (the head goes out at once, with the state before) and debited
 * when the body ends.
 */
export interface CountedAnswer {
  /** The fields the client's answer carries: now, or once the debit has landed. */
  extra: Record<string, string> | Promise<Record<string, string>>;
  /** For a cost in the body: fed each chunk as it passes; `end` (idempotent) debits. */
  tap?: BodyTap;
}

// The tap's types live in body-tap.ts (preset-tap.ts implements one too); re-exported for the edges.
export { type BodyBytes, type BodyTap, TAP_DECODINGS, type TapDecoding } from "./body-tap.js";

/** Where a counted request's answer reports to: its route, the warnings log, how to settle. */
export interface AnswerCountContext {
  counting: RouteCounting;
  /** `routes.0`, for the log. */
  field: string;
  warnings: UsageWarnings;
  settle: Settle;
  /** The fields before the debit (the peek's). */
  before: Record<string, string>;
  /** A cost known before forwarding (constant, request header); undefined for an answer's. */
  requestCost: number | undefined;
  /** A "usage" cost (measures.ts): charges every measure at once (measured-limit.ts); `settle` is then unused. */
  charge?: (charges: Charges, later: boolean) => Promise<unknown> | undefined;
  /**
   * The store carries debits with the key's next request (Limiter.debitLater without debitNow:
   * the Durable Object): a cost known at the head is carried too, not waited on, so a counted
   * answer costs no second object request; its head then shows the state before the debit.
   */
  carries?: boolean;
}

/** Whether a debit of `limiter` may ride with the key's next request (AnswerCountContext.carries). */
export const carriesDebits = (limiter: { debitLater?: unknown; debitNow?: unknown }): boolean => limiter.debitLater !== undefined && limiter.debitNow === undefined;

/**
 * A request's cost when it is known before forwarding: a constant, or its request header
 * (absent or not a count: `missing`, the unusable value logged).
 */
export function requestCostOf(source: CostSource, headers: HeaderLookup, field: string, warnings: UsageWarnings): number | undefined {
  if (source.from === "constant") return source.cost;
  if (source.from !== "requestHeader") return undefined;
  return costFromHeader(headers.get(source.name), source.name, source.bounds, field, warnings);
}

function costFromHeader(text: string | null, name: string, bounds: CostBounds, field: string, warnings: UsageWarnings): number {
  const read = headerCost(text, bounds);
  if (read.present && !read.usable) warnings.warn(field, { route: field, header: name, value: String(text).slice(0, 64), cost: read.cost });
  return read.cost;
}

/** One counted request's answer: built before forwarding, asked once its head arrives. */
export class AnswerCount {
  readonly #context: AnswerCountContext;

  constructor(context: AnswerCountContext) {
    this.#context = context;
  }

  /** How long (and how far) the edge goes on once the client has gone: the answer is still charged. */
  get limits(): ReadLimits {
    return this.#context.counting.read;
  }

  /**
   * The client went away and the origin's head did not come within the route's maxReadMs: a
   * cost the answer would have reported is charged `missing` (the work may have been done);
   * a status count charges nothing, the status being unknown.
   */
  abandoned(defer: (promise: Promise<unknown>) => void): void {
    const { counting, settle, field, warnings, charge } = this.#context;
    const source = counting.cost;
    if (!counting.count && source.from === "usage" && charge) {
      const { charges } = chargesOf({}, source, false);
      warnings.warn(field, { route: field, reason: `the origin had not answered ${counting.read.ms} ms after the client left (maxReadMs)`, charges });
      const charged = charge(charges, false);
      if (charged) defer(charged);
      return;
    }
    if (counting.count || (source.from !== "responseHeader" && source.from !== "responseJson")) return;
    const cost = source.bounds.missing;
    warnings.warn(field, { route: field, reason: `the origin had not answered ${counting.read.ms} ms after the client left (maxReadMs)`, cost });
    // Nobody waits on it: it may ride with the key's next request.
    const settled = settle(cost, true);
    if (settled instanceof Promise) defer(settled);
  }

  /**
   * `header` reads the answer's fields; `defer` keeps a body's debit alive past the answer
   * (a Worker's waitUntil). `body`: how the edge sees the bytes: decoded by its fetch (the
   * Worker's, undici's: Content-Encoding stays but the bytes are plain), or as the origin
   * encoded them, which the edge decodes for the tap (node:http: those of `decodings`) or cannot.
   */
  answered(status: number, header: (name: string) => string | null, defer: (promise: Promise<unknown>) => void, body: BodyBytes = "decoded", decodings: readonly TapDecoding[] = TAP_DECODINGS): CountedAnswer {
    const { counting, settle, before, field, warnings } = this.#context;
    if (counting.count && !statusMatches(counting.count, status)) return { extra: before };
    const source = counting.cost;
    if (this.#context.requestCost !== undefined) return this.#atHead(this.#context.requestCost, defer);
    if (source.from === "responseHeader") return this.#atHead(costFromHeader(header(source.name), source.name, source.bounds, field, warnings), defer);
    if (source.from !== "responseJson" && source.from !== "usage") return this.#atHead(1, defer);
    const encoding = body === "decoded" ? undefined : header("content-encoding")?.trim().toLowerCase();
    const decoding = body === "raw" ? decodings.find((name) => name === encoding) : undefined;
    const charge = this.#context.charge;
    if (source.from === "usage" && charge) {
      const reader = presetReader(source.preset, header("content-type"), decoding || encoding === "identity" ? null : (encoding ?? null));
      const tapContext = { cost: source, limits: counting.read, field, warnings, charge: (charges: Charges) => {
        // Nobody waits on a body's charges: they may ride with the key's next request.
        const charged = charge(charges, true);
        if (charged) defer(charged);
      } };
      return { extra: before, tap: new PresetTap(reader, tapContext, decoding) };
    }
    if (source.from !== "responseJson") return this.#atHead(1, defer);
    // An encoding the edge cannot decode leaves the reader nothing to read: `missing`, logged.
    const reader = usageReader(source.path, header("content-type"), decoding || encoding === "identity" ? null : (encoding ?? null));
    const debit = (cost: number) => {
      // Nobody waits on a body's debit: it may ride with the key's next request (Limiter.debitLater).
      const settled = settle(cost, true);
      if (settled instanceof Promise) defer(settled);
    };
    return { extra: before, tap: new UsageTap(reader, { bounds: source.bounds, path: source.path, limits: counting.read, field, warnings, debit }, decoding) };
  }

  /** A cost known at the head: debited before it goes out, or, on a store that carries debits, carried (the head shows the state before). */
  #atHead(cost: number, defer: (promise: Promise<unknown>) => void): CountedAnswer {
    const { settle, before, carries } = this.#context;
    if (!carries) return { extra: settle(cost) };
    const settled = settle(cost, true);
    if (settled instanceof Promise) defer(settled);
    return { extra: before };
  }
}

interface TapContext {
  bounds: CostBounds;
  path: readonly string[];
  limits: ReadLimits;
  field: string;
  warnings: UsageWarnings;
  debit: (cost: number) => void;
}

/** Feeds a body to its usage reader and debits once, when it ends, within BoundedTap's bounds (body-tap.ts). */
class UsageTap extends BoundedTap<UsageReader> {
  readonly #context: TapContext;

  constructor(reader: UsageReader, context: TapContext, encoding: TapDecoding | undefined) {
    super(reader, context.limits, encoding);
    this.#context = context;
  }

  end(): void {
    const finished = this.finished();
    if (!finished) return;
    const { reader, cutBy } = finished;
    const { bounds, field, warnings, path } = this.#context;
    const result = reader.finish();
    const read = reportedCost(result.found ? result.value : undefined, bounds);
    let cost = read.cost;
    if (cutBy !== undefined) {
      // Cut before the end, the usage may still have been to come (an SSE stream's last event): never less than `missing`.
      cost = Math.max(read.usable ? read.cost : 0, bounds.missing);
      warnings.warn(field, { route: field, reason: `the answer was read up to ${cutBy}`, cost });
    } else if (result.found && !read.usable) warnings.warn(field, { route: field, value: describe(result.value), cost });
    else if (!result.found) warnings.warn(field, { route: field, reason: result.reason ?? `the answer has no ${path.join(".")}`, cost });
    this.#context.debit(cost);
  }
}

const describe = (value: unknown) => {
  try {
    return (JSON.stringify(value) ?? String(value)).slice(0, 64);
  } catch {
    return String(value).slice(0, 64);
  }
};
