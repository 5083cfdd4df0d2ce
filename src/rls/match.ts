import type { RlsDomain, RlsNode, RlsRule } from "./types.js";

/** A descriptor entry as the request sends it. */
export type Entry = readonly [key: string, value: string];

/** The rule a descriptor matched, with what its counter and its metrics are named by. */
export interface Match {
  node: RlsNode;
  rule: RlsRule;
  /**
   * The entries that name the counter: the request's own values, except that an entry matched
   * by a `share_threshold` wildcard contributes the pattern, so all its values share one counter.
   */
  counterEntries: readonly Entry[];
  /** The metrics' `key` label: the rule's stat key, or with the request's values for detailed_metric. */
  metricKey: string;
}

/**
 * The reference's matching rule. The request's entries are walked one level of the config tree
 * each; at each level the most specific entry wins: `key` + exact `value` first, then the first
 * wildcard value (in file order) of that key, then the bare `key`. A limit applies only when the
 * walk reaches it with the request's last entry: a request with more entries than the tree has
 * levels, or fewer, matches nothing (unknown descriptors have no limit).
 *
 * Worked through with the reference's "messaging" example: the request
 * ("message_type", "marketing"), ("to_number", "2061111111") matches `message_type_marketing`
 * at level 1 (exact), then `to_number` at level 2 (bare key): 5 a day for that number; the
 * request ("to_number", "2061111111") alone matches the top-level `to_number`: 100 a day.
 */
export function matchDescriptor(domain: RlsDomain, entries: readonly Entry[]): Match | undefined {
  let level = domain.level;
  let shared: Map<number, string> | undefined;
  for (let i = 0; i < entries.length; i++) {
    const [key, value] = entries[i]!;
    let node = level.exact.get(key)?.get(value);
    if (!node) {
      for (const wildcard of level.wildcards) {
        if (wildcard.key === key && wildcardMatches(wildcard.parts, value)) {
          node = wildcard.node;
          if (node.shareThreshold) (shared ??= new Map()).set(i, node.value!);
          break;
        }
      }
    }
    node ??= level.byKey.get(key);
    if (!node) return undefined;
    if (i === entries.length - 1) return node.rule ? matched(node, node.rule, entries, shared) : undefined;
    if (!node.children) return undefined;
    level = node.children;
  }
  return undefined;
}

function matched(node: RlsNode, rule: RlsRule, entries: readonly Entry[], shared: Map<number, string> | undefined): Match {
  // The request's own entries when nothing is shared (read only, never kept past the request but by the planner's cache of names).
  const counterEntries = shared ? entries.map(([key, value], i): Entry => [key, shared.get(i) ?? value]) : entries;
  const metricKey = node.detailedMetric ? counterEntries.map(([key, value]) => (value === "" ? key : `${key}_${value}`)).join(".") : node.statKey;
  return { node, rule, counterEntries, metricKey };
}

/**
 * Whether `value` matches a pattern split on `*` (each `*` matches zero or more characters):
 * it starts with the first part, ends with the last, and holds the middle ones in order between.
 *
 * @example wildcardMatches(["/api/", "/action"], "/api/7/action") // true
 */
export function wildcardMatches(parts: readonly string[], value: string): boolean {
  if (parts.length === 1) return parts[0] === value;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (value.length < first.length + last.length || !value.startsWith(first) || !value.endsWith(last)) return false;
  let from = first.length;
  const end = value.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    const at = value.indexOf(part, from);
    if (at < 0 || at + part.length > end) return false;
    from = at + part.length;
  }
  return true;
}
