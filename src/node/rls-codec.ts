// The protobuf wire format of ShouldRateLimit's request and answer, by hand. proto-loader's
// own codec (protobufjs) decodes into message objects and copies them into plain ones
// (toObject), and encodes through an object per field written: on every decision. These two
// functions read and write exactly the fields Spillway uses, with the same results as
// proto-loader under RLS_PROTO_OPTIONS (test/unit/rls-codec.test.ts holds them to it, byte
// for byte); an answer with anything else (dynamic_metadata) is encoded by proto-loader.
import type { WireDescriptor, WireRequest } from "../rls/request.js";
import type { RlsAnswer, RlsStatus } from "../rls/status.js";

/** envoy.type.v3.RateLimitUnit by number, as proto-loader names enums (an unknown number stays a number). */
const UNIT_NAMES = ["UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR", "WEEK"];

/** A reader over one message's bytes. */
class Reader {
  pos: number;
  readonly bytes: Buffer;
  readonly end: number;

  constructor(bytes: Buffer, start: number, end: number) {
    this.bytes = bytes;
    this.pos = start;
    this.end = end;
  }

  /** A varint of up to 32 bits (protobufjs's uint32: higher bits are dropped). */
  uint32(): number {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.end) throw new RangeError("index out of range");
      const byte = this.bytes[this.pos++]!;
      if (shift < 32) value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return value >>> 0;
      shift += 7;
      if (shift >= 70) throw new Error("invalid varint encoding");
    }
  }

  /** A uint64 varint, as text (proto-loader's `longs: String`). */
  uint64Text(): string {
    let value = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.end) throw new RangeError("index out of range");
      const byte = this.bytes[this.pos++]!;
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return BigInt.asUintN(64, value).toString();
      shift += 7n;
      if (shift >= 70n) throw new Error("invalid varint encoding");
    }
  }

  /** A length-delimited field's end. */
  lengthEnd(): number {
    const length = this.uint32();
    const end = this.pos + length;
    if (end > this.end) throw new RangeError("index out of range");
    return end;
  }

  string(): string {
    const end = this.lengthEnd();
    const text = this.bytes.toString("utf8", this.pos, end);
    this.pos = end;
    return text;
  }

  /** Skips a field this codec does not read, by its wire type (as protobufjs does). */
  skip(wireType: number): void {
    if (wireType === 0) this.uint64Text();
    else if (wireType === 1) this.advance(8);
    else if (wireType === 2) this.pos = this.lengthEnd();
    else if (wireType === 5) this.advance(4);
    else throw new Error(`invalid wire type ${wireType} at offset ${this.pos}`);
  }

  private advance(bytes: number): void {
    if (this.pos + bytes > this.end) throw new RangeError("index out of range");
    this.pos += bytes;
  }
}

/** RateLimitRequest's bytes as proto-loader decodes them (field names kept, only fields present). */
export function decodeRlsRequest(bytes: Buffer): WireRequest {
  const reader = new Reader(bytes, 0, bytes.length);
  const request: WireRequest = {};
  while (reader.pos < reader.end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    if (field === 1 && (tag & 7) === 2) request.domain = reader.string();
    else if (field === 2 && (tag & 7) === 2) (request.descriptors ??= []).push(readDescriptor(reader, reader.lengthEnd()));
    else if (field === 3 && (tag & 7) === 0) request.hits_addend = reader.uint32();
    else reader.skip(tag & 7);
  }
  return request;
}

function readDescriptor(reader: Reader, end: number): WireDescriptor {
  const descriptor: WireDescriptor = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    if (field === 1 && (tag & 7) === 2) (descriptor.entries ??= []).push(readEntry(reader, reader.lengthEnd()));
    else if (field === 2 && (tag & 7) === 2) descriptor.limit = readOverride(reader, reader.lengthEnd());
    else if (field === 3 && (tag & 7) === 2) descriptor.hits_addend = readUInt64Value(reader, reader.lengthEnd());
    else reader.skip(tag & 7);
  }
  return finished(reader, end, descriptor);
}

function readEntry(reader: Reader, end: number): { key?: string; value?: string } {
  const entry: { key?: string; value?: string } = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    if (field === 1 && (tag & 7) === 2) entry.key = reader.string();
    else if (field === 2 && (tag & 7) === 2) entry.value = reader.string();
    else reader.skip(tag & 7);
  }
  return finished(reader, end, entry);
}

function readOverride(reader: Reader, end: number): NonNullable<WireDescriptor["limit"]> {
  const limit: NonNullable<WireDescriptor["limit"]> = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    if (field === 1 && (tag & 7) === 0) limit.requests_per_unit = reader.uint32();
    else if (field === 2 && (tag & 7) === 0) {
      // An enum is an int32 on the wire; proto-loader names the values it knows.
      const unit = reader.uint32() | 0;
      limit.unit = UNIT_NAMES[unit] ?? unit;
    } else reader.skip(tag & 7);
  }
  return finished(reader, end, limit);
}

function readUInt64Value(reader: Reader, end: number): NonNullable<WireDescriptor["hits_addend"]> {
  const wrapper: NonNullable<WireDescriptor["hits_addend"]> = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === 0) wrapper.value = reader.uint64Text();
    else reader.skip(tag & 7);
  }
  return finished(reader, end, wrapper);
}

/** A sub-message must end exactly where its length said. */
function finished<T>(reader: Reader, end: number, message: T): T {
  if (reader.pos !== end) throw new RangeError("index out of range");
  return message;
}

const CODES: Record<string, number> = { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 };
type CurrentLimit = NonNullable<RlsStatus["current_limit"]>;

/** current_limit's bytes (tag and length included) by object: the planner makes one per rule limit, so most are encoded once. */
const currentLimitBytes = new WeakMap<CurrentLimit, Buffer>();

/**
 * RateLimitResponse's bytes, as proto-loader encodes `answer` (fields in number order, a
 * field written whenever it is set). `fallback` (proto-loader's encoder) takes an answer
 * with fields this codec does not write, or values outside what it writes exactly.
 */
export function encodeRlsAnswer(answer: RlsAnswer, fallback: (answer: RlsAnswer) => Buffer): Buffer {
  if (!plainAnswer(answer)) return fallback(answer);
  const statuses = answer.statuses;
  let size = answer.overall_code === undefined ? 0 : 2;
  const statusSizes: number[] = new Array(statuses.length);
  for (let i = 0; i < statuses.length; i++) {
    const length = statusSize(statuses[i]!);
    statusSizes[i] = length;
    size += 1 + varintSize(length) + length;
  }
  const headers = answer.response_headers_to_add;
  if (headers) for (const header of headers) size += lengthDelimitedSize(headerSize(header));
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  if (answer.overall_code !== undefined) {
    out[pos++] = 0x08;
    out[pos++] = CODES[answer.overall_code]!;
  }
  for (let i = 0; i < statuses.length; i++) {
    out[pos++] = 0x12;
    pos = writeVarint(out, pos, statusSizes[i]!);
    pos = writeStatus(out, pos, statuses[i]!);
  }
  if (headers) {
    for (const header of headers) {
      out[pos++] = 0x1a;
      pos = writeVarint(out, pos, headerSize(header));
      pos = writeString(out, pos, 0x0a, header.key);
      pos = writeString(out, pos, 0x12, header.value);
    }
  }
  return out;
}

/** Only the fields this codec writes, each a value it writes exactly (the usual answer). */
function plainAnswer(answer: RlsAnswer): boolean {
  for (const name in answer) if (name !== "overall_code" && name !== "statuses" && name !== "response_headers_to_add") return false;
  if (answer.overall_code !== undefined && CODES[answer.overall_code] === undefined) return false;
  for (const status of answer.statuses) {
    for (const name in status) if (name !== "code" && name !== "current_limit" && name !== "limit_remaining" && name !== "duration_until_reset") return false;
    if (status.code !== undefined && CODES[status.code] === undefined) return false;
    if (!uint32(status.limit_remaining)) return false;
    const limit = status.current_limit;
    if (limit && (typeof limit.name !== "string" || !uint32(limit.requests_per_unit) || !uint32(limit.unit) || limit.unit > 7)) return false;
    const duration = status.duration_until_reset;
    if (duration && (!Number.isSafeInteger(duration.seconds) || duration.seconds < 0 || !uint32(duration.nanos) || duration.nanos > 999_999_999)) return false;
  }
  for (const header of answer.response_headers_to_add ?? []) {
    for (const name in header) if (name !== "key" && name !== "value") return false;
    if (typeof header.key !== "string" || typeof header.value !== "string") return false;
  }
  return true;
}

function uint32(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 0xffff_ffff;
}

function statusSize(status: RlsStatus): number {
  let size = status.code === undefined ? 0 : 2;
  if (status.current_limit) size += currentLimitOf(status.current_limit).length;
  if (status.limit_remaining !== undefined) size += 1 + varintSize(status.limit_remaining);
  const duration = status.duration_until_reset;
  if (duration) size += lengthDelimitedSize(durationSize(duration));
  return size;
}

function writeStatus(out: Buffer, pos: number, status: RlsStatus): number {
  if (status.code !== undefined) {
    out[pos++] = 0x08;
    out[pos++] = CODES[status.code]!;
  }
  if (status.current_limit) pos += currentLimitOf(status.current_limit).copy(out, pos);
  if (status.limit_remaining !== undefined) {
    out[pos++] = 0x18;
    pos = writeVarint(out, pos, status.limit_remaining);
  }
  const duration = status.duration_until_reset;
  if (duration) {
    out[pos++] = 0x22;
    pos = writeVarint(out, pos, durationSize(duration));
    if (duration.seconds !== undefined) {
      out[pos++] = 0x08;
      pos = writeVarint(out, pos, duration.seconds);
    }
    if (duration.nanos !== undefined) {
      out[pos++] = 0x10;
      pos = writeVarint(out, pos, duration.nanos);
    }
  }
  return pos;
}

function durationSize(duration: { seconds: number; nanos: number }): number {
  return (duration.seconds === undefined ? 0 : 1 + varintSize(duration.seconds)) + (duration.nanos === undefined ? 0 : 1 + varintSize(duration.nanos));
}

/** current_limit (field 2 of a status) encoded: requests_per_unit, unit, name, in field order. */
function currentLimitOf(limit: CurrentLimit): Buffer {
  const cached = currentLimitBytes.get(limit);
  if (cached) return cached;
  const nameBytes = Buffer.byteLength(limit.name);
  const body = 1 + varintSize(limit.requests_per_unit) + 2 + 1 + varintSize(nameBytes) + nameBytes;
  const bytes = Buffer.allocUnsafe(lengthDelimitedSize(body));
  let pos = 0;
  bytes[pos++] = 0x12;
  pos = writeVarint(bytes, pos, body);
  bytes[pos++] = 0x08;
  pos = writeVarint(bytes, pos, limit.requests_per_unit);
  bytes[pos++] = 0x10;
  bytes[pos++] = limit.unit;
  writeString(bytes, pos, 0x1a, limit.name);
  // Kept only for an object nobody can change since (the planner's are frozen).
  if (Object.isFrozen(limit)) currentLimitBytes.set(limit, bytes);
  return bytes;
}

function headerSize(header: { key: string; value: string }): number {
  return lengthDelimitedSize(Buffer.byteLength(header.key)) + lengthDelimitedSize(Buffer.byteLength(header.value));
}

/** A length-delimited field's size with its one-byte tag. */
function lengthDelimitedSize(length: number): number {
  return 1 + varintSize(length) + length;
}

function writeString(out: Buffer, pos: number, tag: number, text: string): number {
  out[pos++] = tag;
  const length = Buffer.byteLength(text);
  pos = writeVarint(out, pos, length);
  return pos + out.write(text, pos, length, "utf8");
}

/** A non-negative integer up to 2^53 as a varint. */
function writeVarint(out: Buffer, pos: number, value: number): number {
  while (value >= 0x80) {
    out[pos++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  out[pos++] = value;
  return pos;
}

function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    size++;
  }
  return size;
}
