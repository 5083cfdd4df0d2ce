import { parseDurationMs } from "../core/duration.js";
import { parsePolicy, parsePolicyList } from "../core/policy.js";
import type { Policy } from "../core/types.js";
import { ValidationError, describeValue } from "../core/validation.js";
import { type RlsConfig, type RlsDomain, type RlsLevel, type RlsNode, type RlsPolicy, type RlsRule, type RlsWildcard, UNITS, UNIT_MS, type UnitName } from "./types.js";

/**
 * envoyproxy/ratelimit's config files as they are, plus Spillway's extensions, parsed
 * strictly: an unknown field is an error, as it is in the reference. Every error names the
 * file and the field: `messaging.yaml: descriptors.0.rate_limit.unit: must be one of …`.
 *
 *   domain: messaging              # one per file, unique across files
 *   atomic: false                  # Spillway: count descriptors independently (default: all-or-nothing)
 *   descriptors:
 *     - key: to_number             # value omitted: every value gets its own counter
 *       rate_limit: { unit: day, requests_per_unit: 100, algorithm: sliding-window, period: 12h }
 *       policies: [ { name: burst, algorithm: gcra, limit: 5, period: 1m } ]   # Spillway: more limits
 */

/** One file's parsed content (YAML or JSON) and its name. */
export interface RlsFile {
  name: string;
  content: unknown;
}

/** The most a domain name may hold: it becomes part of a store key (at most 512 bytes). */
const MAX_DOMAIN_LENGTH = 256;
/** Limits one descriptor may stack (`rate_limit` plus `policies`). */
export const MAX_POLICIES_PER_DESCRIPTOR = 8;

const ROOT_FIELDS = new Set(["domain", "descriptors", "atomic"]);
const DESCRIPTOR_FIELDS = new Set(["key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode", "detailed_metric", "value_to_metric", "share_threshold", "metadata", "policies"]);
const RATE_LIMIT_FIELDS = new Set(["unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm", "period", "burst", "failMode"]);

/** Validates every file and joins them: one domain per file, each domain in one file only. */
export function parseRlsConfig(files: readonly RlsFile[]): RlsConfig {
  const domains = new Map<string, RlsDomain>();
  for (const file of files) {
    const domain = parseDomain(file);
    const earlier = domains.get(domain.name);
    if (earlier) throw new ValidationError(`${file.name}: domain`, `"${domain.name}" is already defined in ${earlier.file} (one domain per file)`);
    domains.set(domain.name, domain);
  }
  return { domains };
}

function parseDomain(file: RlsFile): RlsDomain {
  const at = (path: string) => `${file.name}: ${path}`;
  const root = objectAt(file.content, file.name, "a mapping with domain and descriptors");
  checkFields(root, ROOT_FIELDS, (path) => at(path));
  const name = root.domain;
  if (typeof name !== "string" || name === "") throw new ValidationError(at("domain"), `must be a non-empty string, got ${describeValue(name)}`);
  if (name.length > MAX_DOMAIN_LENGTH) throw new ValidationError(at("domain"), `must be at most ${MAX_DOMAIN_LENGTH} characters, got ${name.length}`);
  const atomic = root.atomic ?? true;
  if (typeof atomic !== "boolean") throw new ValidationError(at("atomic"), `must be true or false, got ${describeValue(atomic)}`);
  return { name, file: file.name, atomic, level: parseLevel(root.descriptors, "descriptors", "", at) };
}

function parseLevel(input: unknown, path: string, parentStatKey: string, at: (path: string) => string): RlsLevel {
  const level = { exact: new Map<string, Map<string, RlsNode>>(), wildcards: [] as RlsWildcard[], byKey: new Map<string, RlsNode>() };
  if (input === undefined || input === null) return level;
  if (!Array.isArray(input)) throw new ValidationError(at(path), `must be a list of descriptors, got ${describeValue(input)}`);
  const seen = new Map<string, string>();
  input.forEach((item, index) => {
    const itemPath = `${path}.${index}`;
    const node = parseNode(item, itemPath, parentStatKey, at);
    const identity = node.value === undefined ? `key ${JSON.stringify(node.key)}` : `key ${JSON.stringify(node.key)} and value ${JSON.stringify(node.value)}`;
    const first = seen.get(identity);
    if (first) throw new ValidationError(at(itemPath), `repeats ${first} (${identity}): each key/value pair appears once per level`);
    seen.set(identity, itemPath);
    if (node.value === undefined) level.byKey.set(node.key, node);
    else if (node.value.includes("*")) level.wildcards.push({ key: node.key, parts: node.value.split("*"), node });
    else {
      let byValue = level.exact.get(node.key);
      if (!byValue) level.exact.set(node.key, (byValue = new Map()));
      byValue.set(node.value, node);
    }
  });
  return level;
}

function parseNode(input: unknown, path: string, parentStatKey: string, at: (path: string) => string): RlsNode {
  const item = objectAt(input, at(path), "a descriptor with a key");
  checkFields(item, DESCRIPTOR_FIELDS, (field) => at(`${path}.${field}`));
  const key = scalarText(item.key);
  if (key === undefined || key === "") throw new ValidationError(at(`${path}.key`), `must be a non-empty string, got ${describeValue(item.key)}`);
  const value = item.value === undefined || item.value === null || item.value === "" ? undefined : scalarText(item.value);
  if (value === undefined && item.value !== undefined && item.value !== null && item.value !== "") {
    throw new ValidationError(at(`${path}.value`), `must be a string, got ${describeValue(item.value)}`);
  }
  const flag = (field: string) => booleanAt(item[field], at(`${path}.${field}`));
  const shareThreshold = flag("share_threshold");
  if (shareThreshold && !value?.includes("*")) throw new ValidationError(at(`${path}.share_threshold`), `needs a wildcard value (one holding "*"), got ${describeValue(value)}`);
  flag("value_to_metric");
  const statKey = `${parentStatKey}${parentStatKey ? "." : ""}${value === undefined ? key : `${key}_${value}`}`;
  const rule = parseRule(item.rate_limit, item.policies, path, statKey, at);
  const node: RlsNode = { key, statKey, shadowMode: flag("shadow_mode"), quotaMode: flag("quota_mode"), detailedMetric: flag("detailed_metric") || flag("value_to_metric"), shareThreshold };
  if (value !== undefined) node.value = value;
  if (item.metadata !== undefined && item.metadata !== null) node.metadata = parseMetadata(item.metadata, at(`${path}.metadata`));
  if (rule) node.rule = rule;
  if (item.descriptors !== undefined && item.descriptors !== null) node.children = parseLevel(item.descriptors, `${path}.descriptors`, statKey, at);
  return node;
}

function parseRule(rateLimit: unknown, extra: unknown, path: string, statKey: string, at: (path: string) => string): RlsRule | undefined {
  const policies: RlsPolicy[] = [];
  let rule: RlsRule | undefined;
  if (rateLimit !== undefined && rateLimit !== null) {
    rule = parseRateLimit(rateLimit, `${path}.rate_limit`, statKey, at);
    if (rule.kind === "limit") policies.push(...rule.policies);
  }
  if (extra !== undefined) {
    if (rule && rule.kind !== "limit") throw new ValidationError(at(`${path}.policies`), `cannot be used with an ${rule.kind === "unlimited" ? "unlimited" : "requests_per_unit: 0"} rate_limit`);
    policies.push(...parseExtraPolicies(extra, `${path}.policies`, at));
    if (policies.length > MAX_POLICIES_PER_DESCRIPTOR) throw new ValidationError(at(`${path}.policies`), `a descriptor may stack at most ${MAX_POLICIES_PER_DESCRIPTOR} limits, got ${policies.length}`);
    const names = new Set<string>();
    for (const { policy } of policies) {
      if (names.has(policy.name)) throw new ValidationError(at(`${path}.policies`), `names "${policy.name}" twice on one descriptor`);
      names.add(policy.name);
    }
    return { kind: "limit", ...(rule?.name === undefined ? {} : { name: rule.name }), replaces: rule?.replaces ?? [], policies };
  }
  return rule;
}

function parseRateLimit(input: unknown, path: string, statKey: string, at: (path: string) => string): RlsRule {
  const block = objectAt(input, at(path), "a mapping with unit and requests_per_unit");
  checkFields(block, RATE_LIMIT_FIELDS, (field) => at(`${path}.${field}`));
  const name = block.name === undefined || block.name === "" ? undefined : scalarText(block.name);
  if (name === undefined && block.name !== undefined && block.name !== "") throw new ValidationError(at(`${path}.name`), `must be a string, got ${describeValue(block.name)}`);
  const replaces = parseReplaces(block.replaces, name, `${path}.replaces`, at);
  const named = name === undefined ? {} : { name };
  if (booleanAt(block.unlimited, at(`${path}.unlimited`))) {
    for (const field of ["unit", "requests_per_unit", "algorithm", "period", "burst", "failMode"]) {
      if (block[field] !== undefined) throw new ValidationError(at(`${path}.${field}`), "must not be set when unlimited is true");
    }
    return { kind: "unlimited", ...named, replaces };
  }
  const unitName = block.unit === undefined ? undefined : String(block.unit).toLowerCase();
  if (unitName !== undefined && !(unitName in UNITS)) throw new ValidationError(at(`${path}.unit`), `must be one of ${Object.keys(UNITS).join(", ")}, got ${describeValue(block.unit)}`);
  if (unitName === undefined && block.period === undefined) throw new ValidationError(at(`${path}.unit`), "is required (second, minute, hour or day), or Spillway's period");
  const perUnit = block.requests_per_unit;
  if (typeof perUnit !== "number" || !Number.isInteger(perUnit) || perUnit < 0 || perUnit > 1e9) {
    throw new ValidationError(at(`${path}.requests_per_unit`), `must be an integer from 0 to 1000000000, got ${describeValue(perUnit)}`);
  }
  let periodMs = unitName === undefined ? 0 : UNIT_MS[unitName as UnitName];
  if (block.period !== undefined) {
    const parsed = parseDurationMs(block.period);
    if (!parsed.ok) throw new ValidationError(at(`${path}.period`), parsed.error);
    periodMs = parsed.ms;
  }
  const unit = unitName === undefined ? unitOfPeriod(periodMs) : UNITS[unitName as UnitName];
  if (perUnit === 0) return { kind: "block", ...named, replaces, unit };
  const written: Record<string, unknown> = { name: "rate-limit", algorithm: block.algorithm ?? "fixed-window", limit: perUnit, period: periodMs };
  if (block.burst !== undefined) written.burst = block.burst;
  if (block.failMode !== undefined) written.failMode = block.failMode;
  const policy = inFile(at, () => parsePolicy(written, path));
  if (policy.algorithm === "concurrency") throw new ValidationError(at(`${path}.algorithm`), "must be a rate algorithm: concurrency needs a release the rate limit service never gets");
  return { kind: "limit", ...named, replaces, policies: [{ policy: { ...policy, name: name ?? statKey }, unit, requestsPerUnit: perUnit }] };
}

function parseExtraPolicies(input: unknown, path: string, at: (path: string) => string): RlsPolicy[] {
  const policies: Policy[] = inFile(at, () => parsePolicyList(input, path));
  return policies.map((policy, index) => {
    if (policy.algorithm === "concurrency") throw new ValidationError(at(`${path}.${index}.algorithm`), "must be a rate algorithm: concurrency needs a release the rate limit service never gets");
    if (policy.local) throw new ValidationError(at(`${path}.${index}.local`), "is not supported on rate limit service descriptors");
    return { policy, unit: unitOfPeriod(policy.periodMs), requestsPerUnit: policy.limit };
  });
}

function parseReplaces(input: unknown, ownName: string | undefined, path: string, at: (path: string) => string): string[] {
  if (input === undefined || input === null) return [];
  if (!Array.isArray(input)) throw new ValidationError(at(path), `must be a list like [{ name: other_limit }], got ${describeValue(input)}`);
  return input.map((item, index) => {
    const entry = objectAt(item, at(`${path}.${index}`), "a mapping with a name");
    checkFields(entry, new Set(["name"]), (field) => at(`${path}.${index}.${field}`));
    const name = scalarText(entry.name);
    if (!name) throw new ValidationError(at(`${path}.${index}.name`), `must be a non-empty string, got ${describeValue(entry.name)}`);
    if (name === ownName) throw new ValidationError(at(`${path}.${index}.name`), `must not name this rate_limit itself ("${name}")`);
    return name;
  });
}

/**
 * Runs a policy parser and puts the file in front of its error's field. The parser's `limit`
 * is what this block calls `requests_per_unit`.
 */
function inFile<T>(at: (path: string) => string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const rule = error.message.slice(error.field.length + 2);
    const field = error.field.endsWith(".rate_limit.limit") ? error.field.replace(/\.limit$/, ".requests_per_unit") : error.field;
    throw new ValidationError(at(field), rule);
  }
}

/** The proto unit whose length is exactly `periodMs`, else 0 (UNKNOWN). */
export function unitOfPeriod(periodMs: number): number {
  for (const [name, ms] of Object.entries(UNIT_MS)) if (ms === periodMs) return UNITS[name as UnitName];
  return 0;
}

function objectAt(input: unknown, field: string, what: string): Record<string, unknown> {
  if (input === null || typeof input !== "object" || Array.isArray(input)) throw new ValidationError(field, `must be ${what}, got ${describeValue(input)}`);
  return input as Record<string, unknown>;
}

function checkFields(input: Record<string, unknown>, known: ReadonlySet<string>, at: (field: string) => string): void {
  for (const field of Object.keys(input)) {
    if (!known.has(field)) throw new ValidationError(at(field), "is not a known field");
  }
}

/** A descriptor's `metadata`: a mapping of plain values (text, numbers, booleans, lists, mappings), as a protobuf Struct holds them. */
function parseMetadata(input: unknown, field: string): Record<string, unknown> {
  const mapping = objectAt(input, field, "a mapping");
  const check = (value: unknown, at: string): void => {
    if (value === null || typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))) return;
    if (Array.isArray(value)) return value.forEach((item, index) => check(item, `${at}.${index}`));
    if (typeof value === "object" && !(value instanceof Date)) return Object.entries(value as Record<string, unknown>).forEach(([key, item]) => check(item, `${at}.${key}`));
    throw new ValidationError(at, `must be text, a number, true/false, a list or a mapping, got ${describeValue(value)}`);
  };
  check(mapping, field);
  return mapping;
}

function booleanAt(input: unknown, field: string): boolean {
  if (input === undefined || input === null) return false;
  if (typeof input !== "boolean") throw new ValidationError(field, `must be true or false, got ${describeValue(input)}`);
  return input;
}

/** YAML reads `value: 2061111111` as a number; the reference reads it as the text. */
function scalarText(input: unknown): string | undefined {
  if (typeof input === "string") return input;
  if (typeof input === "number" || typeof input === "boolean") return String(input);
  return undefined;
}
