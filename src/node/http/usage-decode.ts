import zlib from "node:zlib";
import { type BodyTap, TAP_DECODINGS, type TapDecoding } from "../../gateway/answer-count.js";

/** zstd came to node:zlib in Node 22.15: on an older Node a zstd answer is one the tap cannot read. */
const hasZstd = typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === "function";

/** The encodings this Node decodes for a usage tap. */
export const NODE_TAP_DECODINGS: readonly TapDecoding[] = TAP_DECODINGS.filter((name) => name !== "zstd" || hasZstd);

/** Output pieces of 64 KiB: a quarter of the callbacks of zlib's 16 KiB default for the same bytes. */
const CHUNK_BYTES = 64 * 1024;

function decoderFor(encoding: TapDecoding): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress {
  if (encoding === "br") return zlib.createBrotliDecompress({ chunkSize: CHUNK_BYTES });
  if (encoding === "deflate") return zlib.createInflate({ chunkSize: CHUNK_BYTES });
  if (encoding === "zstd") return (zlib as unknown as { createZstdDecompress(options: { chunkSize: number }): zlib.Gunzip }).createZstdDecompress({ chunkSize: CHUNK_BYTES });
  return zlib.createGunzip({ chunkSize: CHUNK_BYTES });
}

/**
 * A tap for an encoded answer (node:http hands the gateway the origin's bytes as sent): the
 * chunks are decoded beside the stream for the usage reader, while the client still gets
 * them encoded, untouched. Decoding is work the gateway does for the reader alone, so it is
 * bounded: it stops once the reader needs no more (the usage found) or past the route's
 * maxReadBytes decoded (the tap counts them), the decoder destroyed at once. A compression
 * bomb (a few KB that expand to GiB) costs the decoding of maxReadBytes, and its debit lands
 * then. A body that does not decode ends the tap with what was read.
 */
export function decodingTap(tap: BodyTap): BodyTap {
  const encoding = tap.encoding;
  if (!encoding) return tap;
  const decoder = decoderFor(encoding);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    decoder.destroy();
    tap.end();
  };
  decoder.on("data", (chunk: Buffer) => {
    tap.push(chunk);
    if (tap.done) stop();
  });
  decoder.once("end", stop);
  decoder.once("error", stop);
  return {
    limits: tap.limits,
    get done() {
      return stopped || tap.done;
    },
    push: (chunk) => {
      if (!stopped) decoder.write(chunk);
    },
    clientGone: () => tap.clientGone(),
    cut: (why) => {
      tap.cut(why);
      stop();
    },
    end: () => {
      // The decoder flushes what it holds, then ends the tap ('end', or 'error' on a truncated body).
      if (!stopped && !decoder.writableEnded) decoder.end();
    },
  };
}
