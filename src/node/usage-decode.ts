import zlib from "node:zlib";
import type { BodyTap } from "../gateway/answer-count.js";

/**
 * A tap for an encoded answer (node:http hands the gateway the origin's bytes as sent): the
 * chunks are decoded beside the stream for the usage reader, while the client still gets
 * them encoded, untouched. A body that does not decode ends the tap with what was read.
 */
export function decodingTap(tap: BodyTap): BodyTap {
  const encoding = tap.encoding;
  if (!encoding) return tap;
  const decoder = encoding === "br" ? zlib.createBrotliDecompress() : encoding === "deflate" ? zlib.createInflate() : zlib.createGunzip();
  decoder.on("data", (chunk: Buffer) => tap.push(chunk));
  decoder.once("end", () => tap.end());
  decoder.once("error", () => tap.end());
  return {
    push: (chunk) => void decoder.write(chunk),
    end: () => {
      if (!decoder.writableEnded) decoder.end();
    },
  };
}
