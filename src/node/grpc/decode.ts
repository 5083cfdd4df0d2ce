// ShouldRateLimit's request, read from its protobuf bytes by hand: proto-loader's own codec
// (protobufjs) decodes into message objects and then copies them into plain ones (toObject), on
// every decision. This reads exactly the fields Spillway uses, into the same plain objects as
// proto-loader under RLS_PROTO_OPTIONS (test/unit/node/grpc/codec.test.ts holds it to that); the
// answer is written by rls-encode.ts.
import { MAX_DESCRIPTORS, type WireDescriptor, type WireRequest } from "../../rls/request.js";

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

/**
 * RateLimitRequest's bytes as proto-loader decodes them (field names kept, only fields present),
 * up to MAX_DESCRIPTORS descriptors: past them the request is refused whatever they hold, so
 * the rest are only counted (their length skipped, not their contents read) into
 * `descriptorCount`. One request of 100,000 descriptors would otherwise hold the event loop for
 * as long as it takes to build them all.
 */
export function decodeRlsRequest(bytes: Buffer): WireRequest {
  const reader = new Reader(bytes, 0, bytes.length);
  const request: WireRequest = {};
  let descriptorCount = 0;
  while (reader.pos < reader.end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    if (field === 1 && (tag & 7) === 2) request.domain = reader.string();
    else if (field === 2 && (tag & 7) === 2) {
      if (++descriptorCount <= MAX_DESCRIPTORS) (request.descriptors ??= []).push(readDescriptor(reader, reader.lengthEnd()));
      else reader.pos = reader.lengthEnd();
    } else if (field === 3 && (tag & 7) === 0) request.hits_addend = reader.uint32();
    else reader.skip(tag & 7);
  }
  if (descriptorCount > MAX_DESCRIPTORS) request.descriptorCount = descriptorCount;
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
