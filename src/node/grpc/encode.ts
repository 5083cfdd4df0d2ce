// ShouldRateLimit's answer, written to protobuf bytes by hand: proto-loader's own codec
// (protobufjs) encodes through an object per field written, on every decision. This writes
// the fields Spillway fills in, the same bytes as proto-loader (test/unit/node/grpc/codec.test.ts
// holds it to that); an answer with anything else (dynamic_metadata) goes to proto-loader's.
import type { RlsAnswer, RlsStatus } from "../../rls/status.js";

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
