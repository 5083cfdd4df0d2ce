import type { ReadLimits } from "./counting.js";

/** Encodings an edge that sees an answer's raw bytes decodes for its tap (node:zlib has them all; zstd from Node 22.15). */
export const TAP_DECODINGS = ["gzip", "x-gzip", "deflate", "br", "zstd"] as const;
export type TapDecoding = (typeof TAP_DECODINGS)[number];

/** How an edge sees an answer's body: see AnswerCount.answered. */
export type BodyBytes = "decoded" | "raw" | "raw-undecodable";

export interface BodyTap {
  /** Set when the chunks are encoded so: the edge decodes them before `push`, at most `limits.bytes` of them. */
  readonly encoding?: TapDecoding;
  /** How far the edge reads for the tap once its client has gone (the route's maxReadBytes, maxReadMs). */
  readonly limits: ReadLimits;
  /** Feeds a chunk as it passes (decoded). */
  push(chunk: Uint8Array): void;
  /** True once reading on is of no use: the usage was found, the body cannot hold it, or a bound was reached. */
  readonly done: boolean;
  /** The client went away: the edge reads on for the tap alone, and what it reads counts against `limits.bytes`. */
  clientGone(): void;
  /** The edge stopped reading before the body's end, at a bound (`why` names it, for the log). */
  cut(why: string): void;
  /** The body ended, broke off or was cut: what was read decides the cost. */
  end(): void;
}

/** What a BoundedTap feeds: a streaming reader of one answer (usage.ts, usage-presets.ts). */
interface StreamReader {
  push(chunk: Uint8Array): void;
  readonly done: boolean;
}

/**
 * A tap's bounds, shared by the usage taps (answer-count.ts UsageTap, preset-tap.ts PresetTap):
 * it reads on its own account (bytes decoded for it, bytes read after the client left) and is
 * `done` past `limits.bytes`, so a compression bomb or an endless answer costs a bounded read.
 * A subclass reads the body's end: `finished()` hands it the reader once, with why it was cut.
 */
export abstract class BoundedTap<R extends StreamReader> implements BodyTap {
  readonly encoding?: TapDecoding;
  readonly limits: ReadLimits;
  #reader: R | undefined;
  #gone = false;
  /** Bytes read on the gateway's own account so far. */
  #ownBytes = 0;
  #cutBy: string | undefined;

  constructor(reader: R, limits: ReadLimits, encoding: TapDecoding | undefined) {
    if (encoding) this.encoding = encoding;
    this.limits = limits;
    this.#reader = reader;
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

  abstract end(): void;

  /** The reader, once (undefined after), and the bound that cut it before its end (undefined: not cut). */
  protected finished(): { reader: R; cutBy: string | undefined } | undefined {
    const reader = this.#reader;
    if (!reader) return undefined;
    this.#reader = undefined;
    return { reader, cutBy: this.#cutBy !== undefined && !reader.done ? this.#cutBy : undefined };
  }
}
