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
