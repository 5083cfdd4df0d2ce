/**
 * The gateway's `allow` and `deny` lists (docs/gateway.md, "Allow and deny lists"): addresses,
 * and keys scoped by the key source that read them, in the words an override's `source` uses
 * (src/overrides/key-source.ts). A client sends whatever it likes in every header, parameter
 * and cookie, so a value is let through only when it comes from the source the entry names:
 * `x-user: vip` never passes for the API key `vip`. A deny entry may leave its source out
 * (a bare string): refusing a value whatever source read it admits nothing.
 */
import * as z from "zod/mini";
import { ValidationError, describeValue, parseWith } from "../core/validation.js";
import { type KeySource, parseKeySource, sourceName } from "../overrides/key-source.js";
import { sourceSchema, sourceView } from "../overrides/parse.js";
import { type IpRange, parseIpRange } from "./ip.js";
import type { RequestKey } from "./keys.js";

/** The keys of one list. */
export interface AccessKeys {
  /** Deny's bare keys: matched whatever source read them. Always empty for allow. */
  everySource: ReadonlySet<string>;
  /** Keys by the name of the source they are for (sourceName: `ip`, `header:x-api-key`, `[header:x-api-key|ip]`). */
  bySource: ReadonlyMap<string, ReadonlySet<string>>;
}

export interface AccessList {
  ips: IpRange[];
  keys: AccessKeys;
}

/** Whether a request's key (its value, read from the source named `source`) is on the list. */
export function listsKey(keys: AccessKeys, key: Pick<RequestKey, "value" | "source">): boolean {
  return keys.everySource.has(key.value) || keys.bySource.get(key.source)?.has(key.value) === true;
}

const EXAMPLE = '{ "key": "vip", "source": "header:x-api-key" }';

/**
 * A scoped entry as written: the override's `key` and `source`.
 * @internal (zod's types stay out of the published declarations: src/core/validation.ts, Same)
 */
export const accessKeySchema = z.strictObject(
  {
    key: z.string({ error: "must be a key string" }),
    source: sourceSchema,
  },
  { error: `must be an object like ${EXAMPLE}` },
);

/** The list as written: `{ ips, keys }` (src/config/schema.ts checks that much). */
export interface AccessListFields {
  ips: readonly string[];
  keys: readonly unknown[];
}

/**
 * Validates `allow` or `deny` (`list` names it) against the routes' key sources: a source no
 * route reads (a typo of one, parts of a composite in another order) would match nothing, and
 * for deny that is a refusal silently not made. Errors name the field: `allow.keys.0.source`.
 */
export function parseAccessList(raw: AccessListFields, list: "allow" | "deny", routeSources: readonly KeySource[]): AccessList {
  const ips = raw.ips.map((item, i) => {
    const range = parseIpRange(item);
    if (typeof range === "string") throw new ValidationError(`${list}.ips.${i}`, range);
    return range;
  });
  const read = new Set(routeSources.map(sourceName));
  const everySource = new Set<string>();
  const bySource = new Map<string, Set<string>>();
  // The example an error gives names the routes' source when there is one to name.
  const example = read.size === 1 ? JSON.stringify(sourceView([...read][0]!)) : '"header:x-api-key"';
  for (const [i, item] of raw.keys.entries()) {
    const field = `${list}.keys.${i}`;
    if (typeof item === "string") {
      if (list === "allow") {
        throw new ValidationError(field, `must name the key source it is for, like { "key": ${describeValue(item)}, "source": ${example} }: a bare key would be let through whatever source it came from (a client can send it in any header), got ${describeValue(item)}`);
      }
      everySource.add(exactKey(item, field));
      continue;
    }
    if (item === null || typeof item !== "object" || Array.isArray(item)) {
      const forms = list === "deny" ? `a key (refused from every source) or an object like ${EXAMPLE}` : `an object like ${EXAMPLE}`;
      throw new ValidationError(field, `must be ${forms}, got ${describeValue(item)}`);
    }
    if (!("source" in item)) {
      const why = list === "allow" ? "an allowed key is let through only from the source it names" : 'a deny entry for every source is the bare key, like "banned"';
      throw new ValidationError(`${field}.source`, `is required (${why}): a route's key source like "ip" or "header:x-api-key", or an array of them for a composite key`);
    }
    const entry = parseWith(accessKeySchema, item, field);
    const key = exactKey(entry.key, `${field}.key`);
    const source = parseKeySource(entry.source);
    if (typeof source === "string") throw new ValidationError(`${field}.source`, source);
    const name = sourceName(source);
    if (!read.has(name)) {
      const names = [...read].map((one) => JSON.stringify(sourceView(one))).join(", ");
      throw new ValidationError(`${field}.source`, `no route reads keys from ${JSON.stringify(sourceView(name))} (the routes' key sources: ${names || "none"}), got ${describeValue(entry.source)}`);
    }
    let keys = bySource.get(name);
    if (!keys) bySource.set(name, (keys = new Set()));
    keys.add(key);
  }
  return { ips, keys: { everySource, bySource } };
}

/** Lists match exact keys: a trailing `*` is a wildcard in overrides, and would match nothing here. */
function exactKey(key: string, field: string): string {
  if (key === "") throw new ValidationError(field, "must not be empty");
  if (key.endsWith("*")) throw new ValidationError(field, `must be an exact key: allow and deny lists have no wildcards (a trailing * is one only in overrides), got ${describeValue(key)}`);
  return key;
}
