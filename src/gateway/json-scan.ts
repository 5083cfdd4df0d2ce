/**
 * Finds the value at a dotted path (`usage.total_tokens`) in a JSON document as its bytes
 * stream past, in one pass, holding only that value: an answer of any size costs the gateway
 * memory for the value and a few numbers, never the body. Only the containers on the path are
 * tracked (at most one per path segment); any other member is skipped by counting brackets.
 *
 * It is a finder, not a validator: it reads the structure it needs and stops at the first
 * occurrence of the path (a document that names the path twice is malformed; JSON.parse would
 * take the last). Whatever cannot be the start of a JSON document stops it as "not JSON".
 */

import { At, BACKSLASH, type Frame, QUOTE, concat, endsBare, isSpace } from "./json-scan-states.js";

/** The most bytes of the value at the path that are kept (an SSE event's cap, usage.ts). */
export const MAX_VALUE_BYTES = 1024 * 1024;
/** Keys longer than this (as written) cannot be a path segment (a path is at most 256 characters). */
const MAX_KEY_BYTES = 2048;

/** `repeated`: the path came twice (`repeats` only): a reader may take either, so neither is taken. */
export type ScanResult = { found: true; value: unknown } | { found: false; reason?: string; repeated?: true };

/**
 * `repeats`: read the whole document, to tell a path that comes twice (`{"model":"a","model":"b"}`:
 * JSON.parse and most origins take the last) from one that comes once. A request body's fields
 * are read so (src/gateway/body-fields.ts); an answer's usage is read at its first occurrence.
 */
export interface ScanOptions {
  repeats?: boolean;
}

export class JsonPathScan {
  readonly #path: readonly string[];
  #at: At = At.Value;
  /** Containers entered through matching segments; frames[i]'s members match path[i]. */
  readonly #frames: Frame[] = [];
  /** The member being read matches its frame's segment. */
  #matches = false;
  /** The value being read is the one at the path: its bytes are kept. */
  #capturing = false;
  #captured: Uint8Array[] = [];
  #capturedBytes = 0;
  #key: Uint8Array[] = [];
  #keyBytes = 0;
  #escaped = false;
  /** Nesting inside a skipped container, and whether the skip is inside a string. */
  #depth = 0;
  #inString = false;
  #started = false;
  #result: ScanResult | undefined;
  readonly #repeats: boolean;

  constructor(path: readonly string[], options: ScanOptions = {}) {
    this.#path = path;
    this.#repeats = options.repeats === true;
  }

  /** True once nothing more needs reading: the value was found, or this is not JSON. */
  get done(): boolean {
    return this.#at === At.Done;
  }

  push(bytes: Uint8Array): void {
    let i = 0;
    const n = bytes.length;
    // Where the kept value starts in this chunk (0 when it started in an earlier one).
    let captureFrom = this.#capturing ? 0 : -1;
    while (i < n && this.#at !== At.Done) {
      const byte = bytes[i]!;
      switch (this.#at) {
        case At.Value:
          if (isSpace(byte) || (!this.#started && (byte === 0xef || byte === 0xbb || byte === 0xbf))) break;
          this.#started = true;
          this.#capturing = this.#matches && this.#frames.length === this.#path.length;
          if (this.#capturing) captureFrom = i;
          this.#startValue(byte);
          break;
        case At.KeyOrEnd:
        case At.Key:
          if (isSpace(byte)) break;
          if (byte === QUOTE) {
            this.#at = At.InKey;
            this.#key = [];
            this.#keyBytes = 0;
            this.#escaped = false;
            // The key's bytes are kept from the next one on; see the InKey case.
            const end = this.#keyEnd(bytes, i + 1);
            i = end;
            continue;
          }
          if (byte === 0x7d && this.#at === At.KeyOrEnd) this.#close();
          else this.#fail();
          break;
        case At.InKey:
          i = this.#keyEnd(bytes, i);
          continue;
        case At.Colon:
          if (isSpace(byte)) break;
          if (byte === 0x3a) this.#at = At.Value;
          else this.#fail();
          break;
        case At.After:
          if (isSpace(byte)) break;
          this.#afterValue(byte);
          break;
        case At.InString:
          i = this.#stringEnd(bytes, i);
          if (i < n) this.#valueDone(bytes, captureFrom, i + 1);
          break;
        case At.InBare:
          if (endsBare(byte)) {
            this.#valueDone(bytes, captureFrom, i);
            continue; // the delimiter is read in the state after the value
          }
          break;
        case At.Nested:
          if (this.#inString) {
            i = this.#stringEnd(bytes, i);
            if (i < n) this.#inString = false;
          } else if (byte === QUOTE) this.#inString = true;
          else if (byte === 0x7b || byte === 0x5b) this.#depth++;
          else if ((byte === 0x7d || byte === 0x5d) && --this.#depth === 0) this.#valueDone(bytes, captureFrom, i + 1);
          break;
      }
      i++;
    }
    if (this.#capturing && captureFrom >= 0) this.#keep(bytes.subarray(captureFrom, n));
  }

  /** What was found once the document ended (or broke off). */
  finish(): ScanResult {
    // Reading repeats, only a whole document answers: one cut short may name the path again further on.
    if (this.#repeats && this.#at !== At.Done && this.#started) return { found: false, reason: "the document ends before it is whole" };
    if (this.#result) return this.#result;
    if (!this.#started) return { found: false };
    // The document ended where the path's value could still have come: it broke off.
    if (this.#frames.length > 0 || this.#capturing) return { found: false, reason: "the answer broke off before its usage" };
    return { found: false };
  }

  #startValue(byte: number): void {
    if (byte === QUOTE) {
      this.#at = At.InString;
      this.#escaped = false;
    } else if (byte === 0x7b || byte === 0x5b) {
      const array = byte === 0x5b;
      if (!this.#capturing && this.#onPath()) {
        this.#frames.push({ array, index: 0, seen: false });
        this.#at = array ? At.Value : At.KeyOrEnd;
        this.#matches = array && this.#segmentIs(0);
      } else {
        // Off the path, skipped by counting brackets; at the path's end, kept whole.
        this.#at = At.Nested;
        this.#depth = 1;
        this.#inString = false;
        this.#escaped = false;
      }
    } else if ((byte >= 0x30 && byte <= 0x39) || byte === 0x2d || byte === 0x74 || byte === 0x66 || byte === 0x6e) {
      this.#at = At.InBare;
    } else if (byte === 0x5d && !this.#capturing && this.#frames.at(-1)?.array && this.#frames.at(-1)!.index === 0) {
      this.#close(); // `[]`
    } else this.#fail();
  }

  /** Whether a container starting now is on the path: the document itself, or a matching member short of the path's end. */
  #onPath(): boolean {
    return this.#frames.length === 0 || (this.#matches && this.#frames.length < this.#path.length);
  }

  /**
   * Where the string being read ends (its closing quote) from `from`, or the chunk's length
   * when it goes on past it. Most of an answer's bytes are in strings (an LLM's content):
   * they are skipped with indexOf, not byte by byte; a quote preceded by an odd run of
   * backslashes is escaped.
   */
  #stringEnd(bytes: Uint8Array, from: number): number {
    let i = from;
    const n = bytes.length;
    if (this.#escaped) {
      this.#escaped = false;
      i++;
    }
    for (;;) {
      const quote = bytes.indexOf(QUOTE, i);
      const end = quote < 0 ? n : quote;
      let run = 0;
      while (end - run - 1 >= i && bytes[end - run - 1] === BACKSLASH) run++;
      if (quote < 0) {
        this.#escaped = run % 2 === 1;
        return n;
      }
      if (run % 2 === 0) return quote;
      i = quote + 1;
      if (i >= n) return n;
    }
  }

  /** Reads a key's bytes from `from`; answers where reading goes on. */
  #keyEnd(bytes: Uint8Array, from: number): number {
    let i = from;
    for (; i < bytes.length; i++) {
      const byte = bytes[i]!;
      if (this.#escaped) this.#escaped = false;
      else if (byte === BACKSLASH) this.#escaped = true;
      else if (byte === QUOTE) break;
    }
    if (this.#keyBytes <= MAX_KEY_BYTES) {
      this.#key.push(bytes.slice(from, i));
      this.#keyBytes += i - from;
    }
    if (i === bytes.length) return i;
    this.#matches = this.#keyBytes <= MAX_KEY_BYTES && this.#keyText() === this.#path[this.#frames.length - 1];
    this.#at = At.Colon;
    if (this.#matches && this.#repeats) {
      const frame = this.#frames.at(-1)!;
      if (frame.seen) {
        // A member on the path named twice in one object (the value itself, or a container on its way).
        this.#at = At.Done;
        this.#result = { found: false, repeated: true };
      } else frame.seen = true;
    }
    return i + 1;
  }

  #keyText(): string {
    const raw = new TextDecoder().decode(concat(this.#key, this.#keyBytes));
    if (!raw.includes("\\")) return raw;
    try {
      return JSON.parse(`"${raw}"`) as string;
    } catch {
      return raw;
    }
  }

  #segmentIs(index: number): boolean {
    const segment = this.#path[this.#frames.length - 1]!;
    return /^\d+$/.test(segment) && Number(segment) === index;
  }

  /** A value ended at `end` (exclusive) in `bytes`. */
  #valueDone(bytes: Uint8Array, captureFrom: number, end: number): void {
    if (this.#capturing) {
      this.#keep(bytes.subarray(Math.max(captureFrom, 0), end));
      this.#capturing = false;
      this.#result = this.#parseCaptured();
      // Reading repeats, the document goes on: the path may come again.
      this.#at = this.#repeats && this.#result.found ? At.After : At.Done;
      return;
    }
    this.#at = At.After;
  }

  #afterValue(byte: number): void {
    const frame = this.#frames.at(-1);
    if (!frame) return this.#fail(); // something after the document's value: not a JSON document we can read further
    if (byte === 0x2c) {
      if (frame.array) {
        frame.index++;
        this.#matches = this.#segmentIs(frame.index);
        this.#at = At.Value;
      } else this.#at = At.Key;
    } else if (byte === (frame.array ? 0x5d : 0x7d)) this.#close();
    else this.#fail();
  }

  /**
   * The innermost container on the path ends without the path's value: the document's own, or
   * the one its matching member held (a key names one member), so the path cannot come again.
   */
  #close(): void {
    if (this.#repeats) {
      // The container ends; its parent's members are read on (the path may come again through a repeated member).
      this.#frames.pop();
      this.#matches = false;
      if (this.#frames.length > 0) this.#at = At.After;
      else {
        this.#at = At.Done;
        this.#result ??= { found: false };
      }
      return;
    }
    this.#at = At.Done;
    this.#result = { found: false };
  }

  #keep(piece: Uint8Array): void {
    if (piece.length === 0) return;
    this.#capturedBytes += piece.length;
    if (this.#capturedBytes <= MAX_VALUE_BYTES) this.#captured.push(piece.slice());
    else this.#captured = [];
  }

  #parseCaptured(): ScanResult {
    if (this.#capturedBytes > MAX_VALUE_BYTES) return { found: false, reason: `the value at ${this.#path.join(".")} is over ${MAX_VALUE_BYTES} bytes` };
    const text = new TextDecoder().decode(concat(this.#captured, this.#capturedBytes));
    this.#captured = [];
    try {
      return { found: true, value: JSON.parse(text) as unknown };
    } catch {
      return { found: false, reason: `the value at ${this.#path.join(".")} is not JSON` };
    }
  }

  #fail(): void {
    this.#at = At.Done;
    this.#capturing = false;
    this.#result = { found: false, reason: "the answer is not JSON" };
  }
}
