import type { Planned } from "./plan.js";
import type { WireRequest } from "./request.js";
import type { RlsStatus } from "./status.js";
import type { ProtoStruct, ProtoValue } from "./types.js";

export type { ProtoStruct, ProtoValue };

/** The proto's unit names by number (the gRPC edge decodes enums as names; a number is a direct caller's). */
const UNIT_NAMES = ["UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR", "WEEK"];

/**
 * RESPONSE_DYNAMIC_METADATA's Struct, in envoyproxy/ratelimit's shape, so Envoy filters that
 * route on it keep working:
 *
 *   { domain: "rl",
 *     descriptors: [ { entries: ["service=service_1"], hitsAddend?: 2, limit?: "requests_per_unit:5 unit:MINUTE" } ],
 *     hitsAddend?: 3,                      // the request's, when not 0
 *     metadata?: { … } }                   // the `metadata` of every descriptor that passed, merged
 *
 * A descriptor passed when its status is OK and it is not unlimited. Merging is the
 * reference's: mappings merge key by key, recursively; otherwise the first descriptor's value stays.
 */
export function dynamicMetadataOf(wire: WireRequest, planned: readonly Planned[], statuses: readonly RlsStatus[]): ProtoStruct {
  const fields: Record<string, ProtoValue> = { domain: { stringValue: wire.domain ?? "" } };
  const descriptors = (wire.descriptors ?? []).map((descriptor): ProtoValue => {
    const own: Record<string, ProtoValue> = { entries: { listValue: { values: (descriptor.entries ?? []).map((entry) => ({ stringValue: `${entry.key ?? ""}=${entry.value ?? ""}` })) } } };
    if (descriptor.limit) own.limit = { stringValue: limitText(descriptor.limit) };
    if (descriptor.hits_addend) own.hitsAddend = { numberValue: Number(descriptor.hits_addend.value ?? 0) };
    return { structValue: { fields: own } };
  });
  fields.descriptors = { listValue: { values: descriptors } };
  if (wire.hits_addend) fields.hitsAddend = { numberValue: wire.hits_addend };
  let passed: Record<string, unknown> | undefined;
  planned.forEach((plan, index) => {
    if (plan.kind !== "limit" && plan.kind !== "block") return;
    if (!plan.metadata || statuses[index]!.code !== "OK") return;
    passed = mergeInto(passed ?? {}, plan.metadata);
  });
  if (passed && Object.keys(passed).length > 0) fields.metadata = { structValue: toProtoStruct(passed) };
  return { fields };
}

/** The descriptor's `limit` override as the reference prints it (its proto text). */
function limitText(limit: NonNullable<NonNullable<WireRequest["descriptors"]>[number]["limit"]>): string {
  const unit = typeof limit.unit === "string" ? limit.unit : (UNIT_NAMES[limit.unit ?? 0] ?? "UNKNOWN");
  return `requests_per_unit:${limit.requests_per_unit ?? 0} unit:${unit}`;
}

/** Merges `source` into `target` (a fresh copy where they meet): mappings merge, otherwise the earlier value stays. */
function mergeInto(target: Record<string, unknown>, source: Readonly<Record<string, unknown>>): Record<string, unknown> {
  for (const [key, value] of Object.entries(source)) {
    const earlier = target[key];
    if (earlier === undefined) target[key] = value;
    else if (isMapping(earlier) && isMapping(value)) target[key] = mergeInto({ ...earlier }, value);
  }
  return target;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A plain JSON-like mapping (a validated `metadata`) as a protobuf Struct. */
export function toProtoStruct(input: Readonly<Record<string, unknown>>): ProtoStruct {
  const fields: Record<string, ProtoValue> = {};
  for (const [key, value] of Object.entries(input)) fields[key] = toProtoValue(value);
  return { fields };
}

function toProtoValue(value: unknown): ProtoValue {
  if (value === null || value === undefined) return { nullValue: "NULL_VALUE" };
  if (typeof value === "number") return { numberValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "string") return { stringValue: value };
  if (Array.isArray(value)) return { listValue: { values: value.map(toProtoValue) } };
  return { structValue: toProtoStruct(value as Record<string, unknown>) };
}
