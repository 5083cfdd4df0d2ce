import { ValidationError } from "../core/validation.js";
import type { RlsFile } from "./config.js";

/**
 * One `ratelimit.config.ratelimit.v3.RateLimitConfig` (envoyproxy/ratelimit's
 * api/ratelimit/config/ratelimit/v3/rls_conf.proto), as an xDS server sends it inside an Any,
 * read from its bytes and turned into the very structure a config file holds: the reference
 * does the same (config_xds.go, ConfigXdsProtoToYaml), so parseRlsConfig is the one parser of
 * both and a pushed config means what the same file means.
 */

/** The xDS type URL of the resource. */
export const RATE_LIMIT_CONFIG_TYPE_URL = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig";

/** rls_conf.proto's RateLimitUnit by number (WEEK is 7, after MONTH and YEAR). */
const UNIT_NAMES: Record<number, string> = { 1: "second", 2: "minute", 3: "hour", 4: "day", 5: "month", 6: "year", 7: "week" };

/**
 * The resource's bytes as a config file: `{ domain, descriptors }` with the reference's YAML
 * field names, named `xDS resource "<name>"` (its name, else its position) in every error.
 * Bytes that are no RateLimitConfig are a ValidationError naming the resource.
 */
export function rateLimitConfigFile(bytes: Uint8Array, index: number): RlsFile {
  try {
    const message = readMessage(bytes, 0, bytes.length);
    const name = text(message, 1);
    const file = name ? `xDS resource ${JSON.stringify(name)}` : `xDS resource ${index}`;
    return { name: file, content: { domain: text(message, 2) ?? "", descriptors: messages(message, 3).map(descriptor) } };
  } catch (error) {
    throw new ValidationError(`xDS resource ${index}`, `is not a RateLimitConfig (${(error as Error).message})`);
  }
}

/** RateLimitDescriptor: key 1, value 2, rate_limit 3, descriptors 4, shadow_mode 5, detailed_metric 6, quota_mode 7, metadata 8. */
function descriptor(message: Message): Record<string, unknown> {
  const out: Record<string, unknown> = { key: text(message, 1) ?? "" };
  const value = text(message, 2);
  if (value) out.value = value;
  const rateLimit = messages(message, 3).at(-1);
  if (rateLimit) out.rate_limit = policy(rateLimit);
  const children = messages(message, 4);
  if (children.length > 0) out.descriptors = children.map(descriptor);
  if (flag(message, 5)) out.shadow_mode = true;
  if (flag(message, 6)) out.detailed_metric = true;
  if (flag(message, 7)) out.quota_mode = true;
  const metadata = messages(message, 8).at(-1);
  if (metadata) out.metadata = struct(metadata);
  return out;
}

/**
 * RateLimitPolicy: unit 1, requests_per_unit 2, unlimited 3, name 4, replaces 5. An unset unit
 * (UNKNOWN) is left out, so the parser says it is required (or, with unlimited, accepts it); an
 * unlimited policy's requests_per_unit is dropped, as the reference ignores it.
 */
function policy(message: Message): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const unitNumber = varint(message, 1) ?? 0;
  if (unitNumber !== 0) out.unit = UNIT_NAMES[unitNumber] ?? `unit number ${unitNumber}`;
  if (flag(message, 3)) out.unlimited = true;
  else out.requests_per_unit = varint(message, 2) ?? 0;
  const name = text(message, 4);
  if (name) out.name = name;
  const replaces = messages(message, 5);
  if (replaces.length > 0) out.replaces = replaces.map((one) => ({ name: text(one, 1) ?? "" }));
  return out;
}

/** google.protobuf.Struct as the plain mapping a YAML file's `metadata` is. */
function struct(message: Message): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // Defined, not assigned: a key named __proto__ is a key like any other, as in a parsed YAML file.
  for (const entry of messages(message, 1)) Object.defineProperty(out, text(entry, 1) ?? "", { value: protoValue(messages(entry, 2).at(-1)), enumerable: true, writable: true, configurable: true });
  return out;
}

/** google.protobuf.Value: null 1, number 2, string 3, bool 4, struct 5, list 6 (the last one set wins, as a oneof). */
function protoValue(message: Message | undefined): unknown {
  const field = message?.fields.at(-1);
  if (!message || !field) return null;
  const { bytes } = message;
  if (field.number === 2 && field.wireType === 1) return new DataView(bytes.buffer, bytes.byteOffset + field.start, 8).getFloat64(0, true);
  if (field.number === 3 && field.wireType === 2) return decoder.decode(bytes.subarray(field.start, field.end));
  if (field.number === 4 && field.wireType === 0) return field.varint !== 0;
  if (field.number === 5 && field.wireType === 2) return struct(readMessage(bytes, field.start, field.end));
  if (field.number === 6 && field.wireType === 2) return messages(readMessage(bytes, field.start, field.end), 1).map(protoValue);
  return null;
}

/** One message's fields in order: where each sits in the bytes (length-delimited) or its varint. */
interface Message {
  bytes: Uint8Array;
  fields: { number: number; wireType: number; start: number; end: number; varint: number }[];
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function readMessage(bytes: Uint8Array, start: number, end: number): Message {
  const fields: Message["fields"] = [];
  let pos = start;
  const readVarint = (): number => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (pos >= end) throw new Error("cut short inside a number");
      const byte = bytes[pos++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    throw new Error("a number longer than 10 bytes");
  };
  while (pos < end) {
    const tag = readVarint();
    const number = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (number === 0) throw new Error(`field number 0 at byte ${pos}`);
    if (wireType === 0) fields.push({ number, wireType, start: pos, end: pos, varint: readVarint() });
    else if (wireType === 1 || wireType === 5) {
      const size = wireType === 1 ? 8 : 4;
      if (pos + size > end) throw new Error("cut short inside a fixed-size field");
      fields.push({ number, wireType, start: pos, end: pos + size, varint: 0 });
      pos += size;
    } else if (wireType === 2) {
      const length = readVarint();
      if (pos + length > end) throw new Error(`field ${number} runs past the end`);
      fields.push({ number, wireType, start: pos, end: pos + length, varint: 0 });
      pos += length;
    } else throw new Error(`wire type ${wireType} at byte ${pos}`);
  }
  return { bytes, fields };
}

const ofNumber = (message: Message, number: number, wireType: number) => message.fields.filter((field) => field.number === number && field.wireType === wireType);

function text(message: Message, number: number): string | undefined {
  const field = ofNumber(message, number, 2).at(-1);
  return field ? decoder.decode(message.bytes.subarray(field.start, field.end)) : undefined;
}

function messages(message: Message, number: number): Message[] {
  return ofNumber(message, number, 2).map((field) => readMessage(message.bytes, field.start, field.end));
}

function varint(message: Message, number: number): number | undefined {
  return ofNumber(message, number, 0).at(-1)?.varint;
}

function flag(message: Message, number: number): boolean {
  return (varint(message, number) ?? 0) !== 0;
}
