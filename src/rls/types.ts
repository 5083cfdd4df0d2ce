import type { Policy } from "../core/types.js";

/**
 * envoyproxy/ratelimit's config, validated (src/rls/config.ts): one domain per file, a tree of
 * descriptors. Matching walks the tree one request entry per level (src/rls/match.ts).
 */
export interface RlsConfig {
  domains: ReadonlyMap<string, RlsDomain>;
}

export interface RlsDomain {
  name: string;
  /** The file it came from (errors and logs name it). */
  file: string;
  /**
   * Spillway's extension (default true): all descriptors of one request are decided in one
   * store call, all-or-nothing. `"atomic": false` counts each on its own, as the reference does.
   */
  atomic: boolean;
  level: RlsLevel;
}

/** One level of the descriptor tree: exact `key_value` entries, wildcard entries in file order, bare `key` entries. */
export interface RlsLevel {
  /** By key, then by value: found without building a text per request. */
  exact: ReadonlyMap<string, ReadonlyMap<string, RlsNode>>;
  wildcards: readonly RlsWildcard[];
  byKey: ReadonlyMap<string, RlsNode>;
}

export interface RlsWildcard {
  key: string;
  /** The value pattern split on `*` (each `*` matches zero or more characters). */
  parts: readonly string[];
  node: RlsNode;
}

export interface RlsNode {
  key: string;
  /** The value as written (a pattern when it holds `*`); undefined: any value. */
  value?: string;
  /** The stat key of this node: `key` or `key_value` per level, joined with ".", as the reference names it. */
  statKey: string;
  rule?: RlsRule;
  shadowMode: boolean;
  /** quota_mode: over its limit, this descriptor refuses the request only when every quota descriptor of it is over. */
  quotaMode: boolean;
  /** metadata: sent back in dynamic_metadata (merged) when this descriptor passes. */
  metadata?: Readonly<Record<string, unknown>>;
  detailedMetric: boolean;
  /** share_threshold: every value this wildcard matches shares one counter. */
  shareThreshold: boolean;
  children?: RlsLevel;
}

/** The proto's RateLimitResponse.RateLimit.Unit values, by name. */
export const UNITS = { second: 1, minute: 2, hour: 3, day: 4, month: 5, year: 6, week: 7 } as const;
export type UnitName = keyof typeof UNITS;
export const UNIT_MS: Record<UnitName, number> = {
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
  month: 30 * 86_400_000,
  year: 365 * 86_400_000,
};

/** What a matched descriptor is held to. */
export type RlsRule =
  | { kind: "unlimited"; name?: string; replaces: readonly string[] }
  | {
      kind: "limit";
      /** rate_limit.name: what `replaces` refers to, and the RateLimit field's name. */
      name?: string;
      replaces: readonly string[];
      policies: readonly RlsPolicy[];
    }
  /** requests_per_unit: 0, the reference's way to refuse a value: always over the limit, no store call. */
  | { kind: "block"; name?: string; replaces: readonly string[]; unit: number };

/** One limit of a rule: a Spillway policy plus what the answer reports about it. */
export interface RlsPolicy {
  /** The policy as written (its name is the rule's label in headers); the store sees a per-counter copy. */
  policy: Policy;
  /** The proto unit reported in current_limit (0, UNKNOWN, for a period no unit names). */
  unit: number;
  /** requests_per_unit reported in current_limit. */
  requestsPerUnit: number;
}

/** google.protobuf.Value as proto-loader encodes it: protobufjs defines the well-known types with camelCase field names, whatever keepCase says. */
export type ProtoValue =
  | { nullValue: "NULL_VALUE" }
  | { numberValue: number }
  | { stringValue: string }
  | { boolValue: boolean }
  | { structValue: ProtoStruct }
  | { listValue: { values: ProtoValue[] } };

/** google.protobuf.Struct as proto-loader encodes it. */
export interface ProtoStruct {
  fields: Record<string, ProtoValue>;
}
