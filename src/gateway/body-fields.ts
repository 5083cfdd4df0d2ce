import { JsonPathScan } from "./json-scan.js";

/**
 * A request body's fields (docs/counting.md, "Fields of the request body"): what `json:` keys,
 * a `requestJson` estimate and `policiesBy` read, from one bounded prefix of the body that the
 * edge holds while it is read, then forwards unchanged before the rest (body-hold.ts on the
 * Worker, the Node edge's Exchange). Runtime-neutral: both edges push byte chunks.
 *
 * A field is read only from a body read whole: a JSON document may name a member twice, and
 * the origin (JSON.parse, Python's json) takes the last, so a field found in a prefix could be
 * named again past it. A body longer than the route's `maxRequestReadBytes`, one that is not
 * JSON, encoded (Content-Encoding) or absent has no fields: each reader's `missing` rule applies.
 * A field named twice is `repeated`: a key refuses the request (400), an estimate is `missing`.
 */

/** What a route reads of a request body: the fields' paths and how many bytes at most. */
export interface BodyRead {
  paths: readonly (readonly string[])[];
  limitBytes: number;
}

/** Holds at most 1 MiB of a request while its fields are read: a long prompt, with room. */
export const DEFAULT_REQUEST_READ_BYTES = 1024 * 1024;
export const REQUEST_READ_BYTES_RANGE = [1024, 64 * 1024 * 1024] as const;

export type BodyField = { found: true; value: unknown } | { found: false; repeated?: true };

/** A request body's fields, once read. `reason`: why it has none (a body too long, not JSON, absent). */
export interface BodyFields {
  /** The body's length in bytes when read whole; undefined when it was not. */
  readonly bytes: number | undefined;
  readonly reason: string | undefined;
  field(path: readonly string[]): BodyField;
}

const pathKey = (path: readonly string[]) => path.join(".");

class ReadFields implements BodyFields {
  readonly bytes: number | undefined;
  readonly reason: string | undefined;
  readonly #fields: ReadonlyMap<string, BodyField>;
  constructor(bytes: number | undefined, reason: string | undefined, fields: ReadonlyMap<string, BodyField> = new Map()) {
    this.bytes = bytes;
    this.reason = reason;
    this.#fields = fields;
  }
  field(path: readonly string[]): BodyField {
    return this.#fields.get(pathKey(path)) ?? { found: false };
  }
}

/** The fields of a request whose body is not read (no body, an upgrade, /v1/forward-auth's check). */
export const noBodyFields = (reason: string): BodyFields => new ReadFields(undefined, reason);

/**
 * Reads one request's body as its chunks come: `push` answers false once no more is wanted (the
 * limit is passed: the body is too long to have fields); `finish` answers the fields.
 */
export class BodyFieldsReader {
  readonly #limitBytes: number;
  readonly #scans: Map<string, JsonPathScan>;
  #bytes = 0;
  #over = false;
  readonly #unreadable: string | undefined;

  /** `contentEncoding`: an encoded body (gzip) is not decoded here, so it has no fields. */
  constructor(read: BodyRead, contentEncoding?: string | null) {
    this.#limitBytes = read.limitBytes;
    this.#scans = new Map(read.paths.map((path) => [pathKey(path), new JsonPathScan(path, { repeats: true })]));
    const encoding = contentEncoding?.trim().toLowerCase();
    this.#unreadable = encoding && encoding !== "identity" ? `the body is encoded (${encoding})` : undefined;
  }

  /** Reads a chunk; false once the body is known to be too long (the rest is not read). */
  push(chunk: Uint8Array): boolean {
    if (this.#over) return false;
    this.#bytes += chunk.length;
    if (this.#bytes > this.#limitBytes) {
      this.#over = true;
      return false;
    }
    if (this.#unreadable === undefined) for (const scan of this.#scans.values()) if (!scan.done) scan.push(chunk);
    return true;
  }

  /** The fields, once the body ended (`ended`) or stopped being read (too long, or the upload broke off). */
  finish(ended: boolean): BodyFields {
    if (this.#over) return noBodyFields(`the body is longer than the ${this.#limitBytes} bytes the route reads (maxRequestReadBytes)`);
    if (!ended) return noBodyFields("the body broke off");
    if (this.#unreadable) return noBodyFields(this.#unreadable);
    if (this.#bytes === 0) return noBodyFields("the request has no body");
    const fields = new Map<string, BodyField>();
    for (const [key, scan] of this.#scans) {
      const result = scan.finish();
      // One path's scan that could not read the document: none is trusted.
      if (!result.found && result.reason !== undefined) return new ReadFields(this.#bytes, "the body is not JSON");
      fields.set(key, result.found ? { found: true, value: result.value } : result.repeated ? { found: false, repeated: true } : { found: false });
    }
    return new ReadFields(this.#bytes, undefined, fields);
  }
}
