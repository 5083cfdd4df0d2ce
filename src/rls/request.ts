import { ValidationError, describeValue } from "../core/validation.js";
import type { Entry } from "./match.js";
import { UNIT_MS, type UnitName } from "./types.js";

/** A ShouldRateLimit request, validated (the proto's field names; entries as pairs). */
export interface RlsRequest {
  domain: string;
  descriptors: RlsDescriptor[];
}

export interface RlsDescriptor {
  entries: Entry[];
  /** hits_addend: the descriptor's own, else the request's, else 1. 0 checks without counting. */
  cost: number;
  /** The descriptor's `limit` override (Envoy's `limit` action), in place of the configured rule. */
  override?: { requestsPerUnit: number; unit: UnitName };
}

/** How the gRPC edge decodes a request (proto-loader: field names kept, 64-bit numbers as strings, enums as names). */
export interface WireRequest {
  domain?: string;
  descriptors?: WireDescriptor[];
  hits_addend?: number;
  /** Set by a decoder that stopped at MAX_DESCRIPTORS (rls-decode.ts): how many descriptors the request holds. */
  descriptorCount?: number;
}

export interface WireDescriptor {
  entries?: { key?: string; value?: string }[];
  limit?: { requests_per_unit?: number; unit?: string | number } | null;
  hits_addend?: { value?: string | number } | null;
}

/** Bounds that keep one request's work small: Envoy sends a handful of each. */
export const MAX_DESCRIPTORS = 64;
export const MAX_ENTRIES = 32;
/** Spillway's largest cost (SPEC: cost 0 … 1e9). */
const MAX_COST = 1e9;
const UNIT_NAMES: Record<string, UnitName> = { SECOND: "second", MINUTE: "minute", HOUR: "hour", DAY: "day", WEEK: "week", MONTH: "month", YEAR: "year" };
const UNIT_NUMBERS: Record<number, UnitName> = { 1: "second", 2: "minute", 3: "hour", 4: "day", 5: "month", 6: "year", 7: "week" };

/**
 * Validates a decoded request. Mistakes are ValidationErrors naming the field in the proto's
 * words (`descriptors.1.entries.0.key: must not be empty`); the gRPC edge answers them with
 * INVALID_ARGUMENT.
 */
export function parseRlsRequest(wire: WireRequest): RlsRequest {
  const domain = wire.domain ?? "";
  if (typeof domain !== "string" || domain === "") throw new ValidationError("domain", "must not be empty");
  const descriptors = wire.descriptors ?? [];
  if (descriptors.length === 0) throw new ValidationError("descriptors", "must hold at least one descriptor");
  const descriptorCount = Math.max(descriptors.length, wire.descriptorCount ?? 0);
  if (descriptorCount > MAX_DESCRIPTORS) throw new ValidationError("descriptors", `must hold at most ${MAX_DESCRIPTORS} descriptors, got ${descriptorCount}`);
  const requestCost = wire.hits_addend ?? 0;
  if (requestCost > MAX_COST) throw new ValidationError("hits_addend", `must be at most ${MAX_COST}, got ${requestCost}`);
  const parsed: RlsDescriptor[] = new Array(descriptors.length);
  for (let i = 0; i < descriptors.length; i++) parsed[i] = parseDescriptor(descriptors[i]!, i, Math.max(1, requestCost));
  return { domain, descriptors: parsed };
}

const pathOf = (index: number) => `descriptors.${index}`;

/** One descriptor; `index` names it in errors (the path text is built only for one). */
function parseDescriptor(wire: WireDescriptor, index: number, requestCost: number): RlsDescriptor {
  const entries = wire.entries ?? [];
  if (entries.length === 0) throw new ValidationError(`${pathOf(index)}.entries`, "must hold at least one entry");
  if (entries.length > MAX_ENTRIES) throw new ValidationError(`${pathOf(index)}.entries`, `must hold at most ${MAX_ENTRIES} entries, got ${entries.length}`);
  const pairs: Entry[] = new Array(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    if (!entry.key) throw new ValidationError(`${pathOf(index)}.entries.${i}.key`, "must not be empty");
    pairs[i] = [entry.key, entry.value ?? ""];
  }
  const descriptor: RlsDescriptor = { entries: pairs, cost: requestCost };
  if (wire.hits_addend) descriptor.cost = parseCost(wire.hits_addend.value, `${pathOf(index)}.hits_addend`);
  if (wire.limit) descriptor.override = parseOverride(wire.limit, `${pathOf(index)}.limit`);
  return descriptor;
}

function parseCost(value: string | number | undefined, field: string): number {
  const cost = Number(value ?? 0);
  if (!Number.isInteger(cost) || cost < 0 || cost > MAX_COST) throw new ValidationError(field, `must be an integer from 0 to ${MAX_COST}, got ${describeValue(value)}`);
  return cost;
}

function parseOverride(limit: NonNullable<WireDescriptor["limit"]>, field: string): RlsDescriptor["override"] {
  const unit = typeof limit.unit === "number" ? UNIT_NUMBERS[limit.unit] : UNIT_NAMES[limit.unit ?? ""];
  if (!unit || !(unit in UNIT_MS)) throw new ValidationError(`${field}.unit`, `must be SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR, got ${describeValue(limit.unit)}`);
  const requestsPerUnit = limit.requests_per_unit ?? 0;
  if (requestsPerUnit > MAX_COST) throw new ValidationError(`${field}.requests_per_unit`, `must be at most ${MAX_COST}, got ${requestsPerUnit}`);
  return { requestsPerUnit, unit };
}
