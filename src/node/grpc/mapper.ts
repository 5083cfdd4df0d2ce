import { readFile } from "node:fs/promises";
import { parse } from "yaml";
import { ValidationError } from "../../core/validation.js";

/**
 * PROMETHEUS_MAPPER_YAML: the statsd_exporter mapping file envoyproxy/ratelimit feeds its
 * stats through (src/stats/prom/prometheus_sink.go; Envoy Gateway mounts one). Spillway keeps
 * no statsd names, so metrics.ts builds the reference's name for each series
 * (`ratelimit.service.rate_limit.<domain>.<key>.<stat>`) and asks this mapper what to export,
 * as statsd_exporter would: glob mappings first (file order), then regex mappings (file order);
 * no match is the exporter's fallback (the name escaped, no labels).
 */
export interface StatsdMapper {
  /** `drop`: not exported; otherwise the Prometheus name, labels and help of a counter. */
  map(statsdName: string): { name: string; labels: Record<string, string>; help?: string } | "drop";
}

interface Mapping {
  regex: RegExp;
  glob: boolean;
  name: string;
  labels: [string, string][];
  drop: boolean;
  help?: string;
}

const VARIABLE = "PROMETHEUS_MAPPER_YAML";
/** statsd_exporter's metric types a mapping may be limited to (match_metric_type); Spillway's stats are counters. */
const METRIC_TYPES = new Set(["counter", "gauge", "observer", "timer", "histogram", "distribution", "summary"]);
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** A glob as statsd_exporter accepts it: dot-separated components of letters, digits, _, - and *. */
const GLOB = /^[a-zA-Z0-9_*-]+(\.[a-zA-Z0-9_*-]+)*$/;

/** The mapper of a file's text; a mistake is a ValidationError naming the variable and the mapping's index. */
export function parseStatsdMapper(text: string, path: string): StatsdMapper {
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new ValidationError(VARIABLE, `${path} is not valid YAML: ${(error as Error).message.split("\n")[0]}`);
  }
  if (document === null || document === undefined) return mapperOf([]);
  if (typeof document !== "object" || Array.isArray(document)) throw new ValidationError(VARIABLE, `${path} must be a mapping file with a "mappings:" list`);
  const { mappings = [], defaults = {} } = document as { mappings?: unknown; defaults?: unknown };
  if (!Array.isArray(mappings)) throw new ValidationError(VARIABLE, `${path}: mappings must be a list`);
  const defaultMatchType = typeof defaults === "object" && defaults !== null ? (defaults as { match_type?: unknown }).match_type : undefined;
  return mapperOf(mappings.map((entry, index) => parseMapping(entry, `${path}: mappings[${index}]`, defaultMatchType)));
}

/** The reference when its file cannot be read: statsd_exporter with no mapping, every name escaped. */
export const UNMAPPED: StatsdMapper = mapperOf([]);

function parseMapping(entry: unknown, at: string, defaultMatchType: unknown): Mapping {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) throw new ValidationError(VARIABLE, `${at} must be a mapping with match and name`);
  // A field set to "" or null is its default, as in statsd_exporter (configs marshalled from its Go struct carry every field).
  const field = (key: string) => {
    const value = (entry as Record<string, unknown>)[key];
    return value === "" || value === null ? undefined : value;
  };
  const [match, name, labels = {}, action = "map", match_metric_type, help] = ["match", "name", "labels", "action", "match_metric_type", "help"].map(field);
  const match_type = field("match_type") ?? (defaultMatchType || "glob");
  if (typeof match !== "string" || match === "") throw new ValidationError(VARIABLE, `${at}.match is required: a glob such as ratelimit.service.rate_limit.*.*.total_hits, or a regex with match_type: regex`);
  if (action !== "map" && action !== "drop") throw new ValidationError(VARIABLE, `${at}.action must be map or drop, got ${JSON.stringify(action)}`);
  if (match_type !== "glob" && match_type !== "regex") throw new ValidationError(VARIABLE, `${at}.match_type must be glob or regex, got ${JSON.stringify(match_type)}`);
  if (match_metric_type !== undefined && !METRIC_TYPES.has(String(match_metric_type))) throw new ValidationError(VARIABLE, `${at}.match_metric_type must be counter, gauge or observer, got ${JSON.stringify(match_metric_type)}`);
  if (action === "map" && (typeof name !== "string" || name === "")) throw new ValidationError(VARIABLE, `${at}.name is required (the Prometheus metric name) unless action is drop`);
  if (typeof labels !== "object" || labels === null || Array.isArray(labels)) throw new ValidationError(VARIABLE, `${at}.labels must be a mapping of label names to values`);
  for (const label of Object.keys(labels)) if (!LABEL_NAME.test(label)) throw new ValidationError(VARIABLE, `${at}.labels: ${JSON.stringify(label)} is not a Prometheus label name`);
  const glob = match_type === "glob";
  if (glob && !GLOB.test(match)) throw new ValidationError(VARIABLE, `${at}.match: ${JSON.stringify(match)} is not a glob (components of letters, digits, _, - and *, separated by dots)`);
  let regex: RegExp;
  try {
    // A glob's * is one component (or part of one); a regex is Go's RE2, unanchored, as statsd_exporter runs it.
    regex = glob ? new RegExp(`^${match.split("*").map(escapeRegex).join("([^.]*)")}$`) : new RegExp(match.replace(/\(\?P</g, "(?<"));
  } catch (error) {
    throw new ValidationError(VARIABLE, `${at}.match: ${(error as Error).message}`);
  }
  // A mapping for gauges or timers never matches a counter: it stays, so that indexes stay the file's.
  const neverCounter = match_metric_type !== undefined && match_metric_type !== "counter";
  return {
    regex: neverCounter ? /$^/ : regex,
    glob,
    name: typeof name === "string" ? name : "",
    labels: Object.entries(labels).map(([label, value]) => [label, String(value)]),
    drop: action === "drop",
    ...(typeof help === "string" ? { help } : {}),
  };
}

function mapperOf(mappings: Mapping[]): StatsdMapper {
  const ordered = [...mappings.filter((mapping) => mapping.glob), ...mappings.filter((mapping) => !mapping.glob)];
  return {
    map(statsdName) {
      for (const mapping of ordered) {
        const captures = mapping.regex.exec(statsdName);
        if (!captures) continue;
        if (mapping.drop) return "drop";
        const labels: Record<string, string> = {};
        for (const [label, template] of mapping.labels) labels[label] = expand(template, captures);
        return { name: escapeMetricName(expand(mapping.name, captures)), labels, ...(mapping.help ? { help: mapping.help } : {}) };
      }
      return { name: escapeMetricName(statsdName), labels: {} };
    },
  };
}

/** Go's regexp Expand, which statsd_exporter uses: `$1`, `${1}`, `${name}`, `$$`; the longest name after `$`; unknown: empty. */
function expand(template: string, captures: RegExpExecArray): string {
  return template.replace(/\$(?:\$|\{([a-zA-Z0-9_]+)\}|([a-zA-Z0-9_]+))/g, (whole, braced: string | undefined, bare: string | undefined) => {
    if (whole === "$$") return "$";
    const name = (braced ?? bare)!;
    const value = /^\d+$/.test(name) ? captures[Number(name)] : captures.groups?.[name];
    return value ?? "";
  });
}

/** statsd_exporter's EscapeMetricName: anything but [a-zA-Z0-9_] becomes _, and a leading digit gets a _ before it. */
export function escapeMetricName(name: string): string {
  const escaped = name.replace(/[^a-zA-Z0-9_]/g, "_");
  return /^\d/.test(escaped) ? `_${escaped}` : escaped;
}

const escapeRegex = (text: string) => text.replace(/[.+?^${}()|[\]\\-]/g, "\\$&");

/** The reference's statsd name for a rule's stat (stats/manager_impl.go NewStats, utils.SanitizeStatName). */
export function statsdNameOf(domain: string, key: string, stat: string): string {
  const sanitized = `${domain}.${key}`.replace(/[:|]/g, "_").replace(/\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}/g, (ip) => ip.replaceAll(".", "_"));
  return `ratelimit.service.rate_limit.${sanitized}.${stat}`;
}

/**
 * The file PROMETHEUS_MAPPER_YAML names. Missing (Envoy Gateway mounts its ConfigMap optionally):
 * the reference runs on with no mapping (it ignores the error), so every name is the exporter's
 * fallback; Spillway does the same and says so. Unreadable otherwise, or malformed: a ValidationError.
 */
export async function loadStatsdMapper(path: string, warn: (line: string) => void): Promise<StatsdMapper> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw new ValidationError(VARIABLE, `cannot read ${path}: ${(error as Error).message}`);
    warn(`${VARIABLE}: ${path} does not exist: no mapping applies (as in envoyproxy/ratelimit), so each stat is exported under its statsd name with the dots made underscores and no labels`);
    return UNMAPPED;
  }
  return parseStatsdMapper(text, path);
}
