import { JsonPathScan, MAX_VALUE_BYTES } from "./json-scan.js";

/**
 * The usage reader: a dotted path (`usage.total_tokens`) read from an answer's body as it
 * streams past, one runtime-neutral reader fed byte chunks by both edges (the Worker's body
 * tap, node:http's 'data' events). It never holds the stream back: the edges forward each
 * chunk as it comes and hand the reader a reference to the same bytes. How much it may read
 * (bytes decoded, bytes read after the client left, time) is the tap's to bound (answer-count.ts).
 *
 * - `text/event-stream`: each data event is parsed as JSON as it completes; the value of the
 *   last event that has the path wins (an LLM API reports usage in the last event).
 * - anything else: a streaming scan of the JSON body (json-scan.ts) that holds only the
 *   path's value, so an answer of any size is read in constant memory; it is done at the
 *   path's first occurrence.
 */

/** What a reader found once the body ended. `reason` says why nothing usable was found, for the log. */
export type UsageResult = { found: true; value: unknown } | { found: false; reason?: string };

export interface UsageReader {
  push(chunk: Uint8Array): void;
  /** True once the reader needs no more of the body: the rest cannot change what it found. */
  readonly done: boolean;
  /** Called once, when the body has ended (or broke off: what was read so far counts). */
  finish(): UsageResult;
}

/** The longest SSE event read (a longer one is skipped): the same bound as a JSON value kept. */
export const MAX_EVENT_BYTES = MAX_VALUE_BYTES;

/**
 * A reader for one answer. `contentType` picks SSE or JSON; an answer with a content-encoding
 * other than identity is not read (its cost is `missing`, with the reason).
 */
export function usageReader(path: readonly string[], contentType: string | null, contentEncoding: string | null, maxEventBytes = MAX_EVENT_BYTES): UsageReader {
  if (contentEncoding && contentEncoding.trim().toLowerCase() !== "identity") return new UnreadableBody(`the answer is encoded (${contentEncoding})`);
  const type = (contentType ?? "").split(";", 1)[0]!.trim().toLowerCase();
  return type === "text/event-stream" ? new EventStreamUsage(path, maxEventBytes) : new JsonPathScan(path);
}

/** True for an answer whose body usage.ts reads as an event stream. */
export const isEventStream = (contentType: string | null) => (contentType ?? "").split(";", 1)[0]!.trim().toLowerCase() === "text/event-stream";

/** An answer encoded other than identity: its body is not read (usage-presets.ts uses it too). */
export function unreadable(contentEncoding: string | null): UsageReader | undefined {
  if (contentEncoding && contentEncoding.trim().toLowerCase() !== "identity") return new UnreadableBody(`the answer is encoded (${contentEncoding})`);
  return undefined;
}

/** The value at `path` in a parsed JSON value; a numeric segment also indexes an array. */
export function valueAt(root: unknown, path: readonly string[]): UsageResult {
  let value = root;
  for (const segment of path) {
    if (Array.isArray(value) && /^\d+$/.test(segment) && Number(segment) < value.length) value = value[Number(segment)];
    else if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.hasOwn(value, segment)) value = (value as Record<string, unknown>)[segment];
    else return { found: false };
  }
  return { found: true, value };
}

class UnreadableBody implements UsageReader {
  readonly #reason: string;
  readonly done = true;
  constructor(reason: string) {
    this.#reason = reason;
  }
  push(): void {}
  finish(): UsageResult {
    return { found: false, reason: this.#reason };
  }
}

/**
 * A `text/event-stream` answer, parsed line by line as it comes (the WHATWG event stream
 * format: lines end in CRLF, LF or CR; `data:` lines of one event are joined by "\n"; a blank
 * line ends the event). Only the line and the event being read are held, each at most maxBytes.
 */
export class EventStreamUsage implements UsageReader {
  readonly #path: readonly string[];
  /** Set: each parsed JSON object event is handed here instead of read at `path` (the presets' readers). */
  readonly #onEvent: ((event: Record<string, unknown>) => void) | undefined;
  readonly #maxBytes: number;
  readonly #decoder = new TextDecoder();
  /** The line read so far (no line ending yet). */
  #line = "";
  /** A line over maxBytes: skipped until its end. */
  #skippingLine = false;
  /** The current event's data lines, joined; undefined until it has one. */
  #data: string | undefined;
  #dataOversized = false;
  /** The last CR ended a line: an LF right after it is the same line ending. */
  #afterCr = false;
  #last: UsageResult = { found: false };
  /** The last event with the path wins: a stream is read to its end. */
  readonly done = false;

  constructor(path: readonly string[], maxBytes: number, onEvent?: (event: Record<string, unknown>) => void) {
    this.#path = path;
    this.#maxBytes = maxBytes;
    this.#onEvent = onEvent;
  }

  push(chunk: Uint8Array): void {
    this.#read(this.#decoder.decode(chunk, { stream: true }));
  }

  finish(): UsageResult {
    this.#read(this.#decoder.decode());
    // A stream that ends without the final blank line: its last event still reports usage.
    if (this.#line !== "" && !this.#skippingLine) this.#field(this.#line);
    this.#line = "";
    this.#dispatch();
    return this.#last;
  }

  #read(text: string): void {
    let start = 0;
    if (this.#afterCr && text.startsWith("\n")) start = 1;
    this.#afterCr = false;
    for (let i = start; i < text.length; i++) {
      const char = text.charCodeAt(i);
      if (char !== 10 && char !== 13) continue;
      this.#append(text.slice(start, i));
      this.#endLine();
      if (char === 13) {
        if (i + 1 === text.length) this.#afterCr = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.#append(text.slice(start));
  }

  #append(piece: string): void {
    if (this.#skippingLine || piece === "") return;
    if (this.#line.length + piece.length > this.#maxBytes) {
      this.#line = "";
      this.#skippingLine = true;
    } else this.#line += piece;
  }

  #endLine(): void {
    const line = this.#line;
    const skipped = this.#skippingLine;
    this.#line = "";
    this.#skippingLine = false;
    if (skipped) {
      // An oversized line may have been a data line: its event is not read.
      this.#dataOversized = true;
      return;
    }
    if (line === "") this.#dispatch();
    else this.#field(line);
  }

  #field(line: string): void {
    if (!line.startsWith("data")) return;
    let value: string;
    if (line === "data") value = "";
    else if (line.charCodeAt(4) === 58) value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    else return; // "datafoo: …" is another field
    const data = this.#data === undefined ? value : `${this.#data}\n${value}`;
    if (data.length > this.#maxBytes) {
      this.#dataOversized = true;
      this.#data = "";
    } else this.#data = data;
  }

  #dispatch(): void {
    const data = this.#data;
    const oversized = this.#dataOversized;
    this.#data = undefined;
    this.#dataOversized = false;
    if (data === undefined || oversized) return;
    const first = data.trimStart()[0];
    // Only objects can hold the path; "[DONE]" and other markers are not JSON objects.
    if (first !== "{") return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return;
    }
    if (this.#onEvent) {
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) this.#onEvent(parsed as Record<string, unknown>);
      return;
    }
    const result = valueAt(parsed, this.#path);
    if (result.found) this.#last = result;
  }
}
