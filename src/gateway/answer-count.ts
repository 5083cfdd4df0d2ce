import { type CostBounds, type UsageWarnings, boundedCost, headerCost, statusMatches } from "../http/counting.js";
import type { Settle } from "../http/count-limit.js";
import type { HeaderLookup } from "./keys.js";
import type { CostSource, RouteCounting } from "./counting.js";
import { type UsageReader, usageReader } from "./usage.js";

/**
 * What a counted route does when the origin's answer head arrives (docs/gateway.md, "Counting
 * what the origin answers"): an unmatched status costs nothing; a matched one is debited its
 * cost. A cost known at the head (a constant, a request or answer header) is debited before
 * the head goes out, so its RateLimit fields show the state after the debit; a cost in the body
 * is read as the body streams past (the head goes out at once, with the state before) and
 * debited when the body ends.
 */
export interface CountedAnswer {
  /** The fields the client's answer carries: now, or once the debit has landed. */
  extra: Record<string, string> | Promise<Record<string, string>>;
  /** For a cost in the body: fed each chunk as it passes; `end` (idempotent) debits. */
  tap?: BodyTap;
}

/** Encodings an edge that sees an answer's raw bytes decodes for its tap (node:zlib has them all). */
export const TAP_DECODINGS = ["gzip", "x-gzip", "deflate", "br"] as const;
export type TapDecoding = (typeof TAP_DECODINGS)[number];

/** How an edge sees an answer's body: see AnswerCount.answered. */
export type BodyBytes = "decoded" | "raw" | "raw-undecodable";

export interface BodyTap {
  /** Set when the chunks are encoded so: the edge decodes them before `push`. */
  readonly encoding?: TapDecoding;
  push(chunk: Uint8Array): void;
  /** The body ended, broke off or was cancelled: what was read decides the cost. */
  end(): void;
}

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
}

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

  /**
   * `header` reads the answer's fields; `defer` keeps a body's debit alive past the answer
   * (a Worker's waitUntil). `body`: how the edge sees the bytes: decoded by its fetch (the
   * Worker's, undici's: Content-Encoding stays but the bytes are plain), or as the origin
   * encoded them, which the edge decodes for the tap (node:http) or cannot.
   */
  answered(status: number, header: (name: string) => string | null, defer: (promise: Promise<unknown>) => void, body: BodyBytes = "decoded"): CountedAnswer {
    const { counting, settle, before, field, warnings } = this.#context;
    if (counting.count && !statusMatches(counting.count, status)) return { extra: before };
    const source = counting.cost;
    if (this.#context.requestCost !== undefined) return { extra: settle(this.#context.requestCost) };
    if (source.from === "responseHeader") return { extra: settle(costFromHeader(header(source.name), source.name, source.bounds, field, warnings)) };
    if (source.from !== "responseJson") return { extra: settle(1) };
    const encoding = body === "decoded" ? undefined : header("content-encoding")?.trim().toLowerCase();
    const decoding = body === "raw" ? TAP_DECODINGS.find((name) => name === encoding) : undefined;
    // An encoding the edge cannot decode leaves the reader nothing to read: `missing`, logged.
    const reader = usageReader(source.path, header("content-type"), decoding || encoding === "identity" ? null : (encoding ?? null));
    const debit = (cost: number) => {
      // Nobody waits on a body's debit: it may ride with the key's next request (Limiter.debitLater).
      const settled = settle(cost, true);
      if (settled instanceof Promise) defer(settled);
    };
    return { extra: before, tap: new UsageTap(reader, source.bounds, field, warnings, debit, decoding) };
  }
}

/** Feeds a body to its usage reader and debits once, when it ends. */
class UsageTap implements BodyTap {
  readonly encoding?: TapDecoding;
  #reader: UsageReader | undefined;
  readonly #bounds: CostBounds;
  readonly #field: string;
  readonly #warnings: UsageWarnings;
  readonly #debit: (cost: number) => void;

  constructor(reader: UsageReader, bounds: CostBounds, field: string, warnings: UsageWarnings, debit: (cost: number) => void, encoding: TapDecoding | undefined) {
    if (encoding) this.encoding = encoding;
    this.#reader = reader;
    this.#bounds = bounds;
    this.#field = field;
    this.#warnings = warnings;
    this.#debit = debit;
  }

  push(chunk: Uint8Array): void {
    this.#reader?.push(chunk);
  }

  end(): void {
    const reader = this.#reader;
    if (!reader) return;
    this.#reader = undefined;
    const result = reader.finish();
    const { cost, usable } = boundedCost(result.found ? result.value : undefined, this.#bounds);
    // An absent value is an answer without usage (an error body); one that is there but no count is the origin's fault: logged.
    if (result.found && !usable) this.#warnings.warn(this.#field, { route: this.#field, value: describe(result.value), cost });
    else if (!result.found && result.reason) this.#warnings.warn(this.#field, { route: this.#field, reason: result.reason, cost });
    this.#debit(cost);
  }
}

const describe = (value: unknown) => {
  try {
    return (JSON.stringify(value) ?? String(value)).slice(0, 64);
  } catch {
    return String(value).slice(0, 64);
  }
};
