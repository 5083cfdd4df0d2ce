/**
 * Which keys a `source` can ever name (issue 45: keys no route can read were accepted in
 * silence): for each policy, the key sources the config's gateway routes count it under, and
 * the form each source's values take. `/v1/credits` and `/v1/overrides` refuse a source that no
 * route of the policy reads, and a key of another number of parts (400 naming the field), and
 * answer a `warning` where the config shows a key is likely not what was meant but may match.
 */
import { type PolicyCatalog, resolvePolicies } from "../core/policy.js";
import { ValidationError, describeValue } from "../core/validation.js";
import { type KeySource, parseKeySource, sourceName } from "./key-source.js";
import { splitKeyParts } from "./key-parts.js";
import { sourceView } from "./parse.js";

/** For each policy name, the sources its routes read keys from, by source name (sourceName). */
export type RouteSources = ReadonlyMap<string, ReadonlyMap<string, KeySource>>;

/**
 * The sources of `routes` (the config's, as written and shape-checked), by policy: each route's
 * `key` and `fallbackKey` for every policy it counts. A route the gateway would refuse adds
 * nothing (the gateway's own parse names its error).
 */
export function routeSourcesOf(routes: readonly unknown[] | undefined, catalog: PolicyCatalog): RouteSources {
  const byPolicy = new Map<string, Map<string, KeySource>>();
  for (const route of routes ?? []) {
    const { key, fallbackKey, policies, policiesBy } = route as { key?: unknown; fallbackKey?: unknown; policies?: unknown; policiesBy?: unknown };
    let names: string[];
    try {
      // policiesBy's lists count under the route's key as its own policies do (src/gateway/policies-by.ts).
      const lists = [...(policies === undefined && policiesBy !== undefined ? [] : [policies]), ...picked(policiesBy)];
      names = lists.flatMap((list) => resolvePolicies(list, catalog, "policies").map((policy) => policy.name));
    } catch {
      continue;
    }
    for (const spec of [key, fallbackKey]) {
      if (typeof spec !== "string" && !Array.isArray(spec)) continue;
      const source = parseKeySource(spec as string | string[]);
      if (typeof source === "string") continue;
      for (const name of names) {
        let sources = byPolicy.get(name);
        if (!sources) byPolicy.set(name, (sources = new Map()));
        sources.set(sourceName(source), source);
      }
    }
  }
  return byPolicy;
}

/** The policy lists of a route's `policiesBy` (each value's, and `default`), as written. */
function picked(policiesBy: unknown): unknown[] {
  if (policiesBy === null || typeof policiesBy !== "object") return [];
  const { policies, default: fallback } = policiesBy as { policies?: unknown; default?: unknown };
  const lists = policies !== null && typeof policies === "object" && !Array.isArray(policies) ? Object.values(policies) : [];
  return fallback === undefined ? lists : [...lists, fallback];
}

/**
 * Checks a (policy, source, key) that `/v1/credits` or `/v1/overrides` was given: the source
 * must be one a route of the policy reads (else the balance is never spent, the override never
 * applied), and the key as many parts as the source joins. Throws a ValidationError naming
 * `source` or `key`; answers a warning sentence, or undefined.
 * `what` says what would be lost: "balance" or "override".
 */
export function checkSourcedKey(sources: RouteSources, policy: string, source: KeySource, key: string, what: "balance" | "override"): string | undefined {
  const name = sourceName(source);
  const read = sources.get(policy);
  const routeSource = read?.get(name);
  if (!routeSource) {
    const names = [...(read?.keys() ?? [])].map((one) => JSON.stringify(sourceView(one))).join(", ");
    const use = what === "balance" ? "spends it" : "would apply it";
    throw new ValidationError("source", `no route that counts "${policy}" reads keys from ${JSON.stringify(sourceView(name))}, so no route ${use} (the routes' key sources for "${policy}": ${names || "none"}), got ${describeValue(sourceView(name))}`);
  }
  const parts = routeSource.kind === "composite" ? routeSource.parts : [routeSource];
  // A wildcard's last part may be cut short: only the whole parts before it are checked.
  const wildcard = what === "override" && key.endsWith("*");
  // One source's value is the key as it is ("a|b" is one header value); only a composite's parts are joined.
  const values = routeSource.kind !== "composite" ? [key] : splitKeyParts(wildcard ? key.slice(0, -1) : key);
  if (wildcard) values.pop();
  else if (values.length !== parts.length) {
    throw new ValidationError("key", `must be ${parts.length} part${parts.length === 1 ? "" : "s"} joined by "|", one for each of ${JSON.stringify(sourceView(name))}, got ${values.length} in ${describeValue(key)}`);
  }
  let warning: string | undefined;
  for (const [i, value] of values.entries()) {
    const part = parts[i];
    if (part?.kind !== "ip") continue;
    const at = parts.length === 1 ? "" : `part ${i} `;
    // `127.0.0.0` written as if ip/56 masked IPv4 too: it does not, so this is one address.
    if (IPV4_NETWORK.test(value) && part.ipv6PrefixBits < 128) {
      warning = `${at}${JSON.stringify(value)} is one IPv4 address: an "ip/N" source counts IPv4 clients whole (the prefix applies to IPv6), so this ${what} is for the client ${value} alone`;
    }
  }
  return warning;
}

/** An IPv4 address that ends in .0: what a prefix would look like, had IPv4 been masked. */
const IPV4_NETWORK = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.0$/;

/**
 * The warning for a balance given without `source` for a policy that gateway routes count: it
 * is for the key as /v1/check, RPC and rateLimit() give it, which no route reads. Not an error
 * (those may spend the policy too), but rarely what was meant. (An override without `source`
 * is not warned of: one policy for routes and /v1 keys alike, each with its overrides, is common.)
 */
export function unsourcedWarning(sources: RouteSources, policy: string, key: string, what: "balance" | "override"): string | undefined {
  const read = sources.get(policy);
  if (!read) return undefined;
  const names = [...read.keys()].map((one) => JSON.stringify(sourceView(one))).join(", ");
  return `no source given: this ${what} is for the key ${JSON.stringify(key)} as /v1/check, RPC and rateLimit() give it, which no gateway route reads; the routes that count "${policy}" read keys from ${names}: name one as "source" for a route's key`;
}
