import { type NotifyInput, notifySchema } from "../notify/config.js";
import * as z from "zod/mini";
import { type Assert, type Same, integerIn } from "../core/validation.js";
import { durationSchema } from "../core/policy.js";

/**
 * The shape of `spillway.config.json`, in one place: the config parser checks every file
 * against it first (so an unknown field, `"rotues"`, is refused by every entry point), and
 * spillway.schema.json is generated from the same field schemas. Rules a schema cannot say
 * (a route naming a policy the file defines, a path pattern's segments, IP ranges) are the
 * parsers' (src/config/config.ts, src/gateway/config.ts).
 */

/** A delayed request holds a connection open: keep that bounded (as acquire's wait is). */
export const MAX_DELAY_MS = 300_000;
export const MAX_ROUTES = 256;
/**
 * How long the gateway waits on a silent origin by default (nginx's proxy_read_timeout is
 * 60 s, Envoy's route timeout 15 s): past it the client gets a 504 and the request's
 * concurrency lease is released.
 */
export const DEFAULT_ORIGIN_TIMEOUT_MS = 30_000;
/** An hour: a longer silence is a hung origin, not a slow one. */
export const MAX_ORIGIN_TIMEOUT_MS = 3_600_000;

/** How long each process or isolate caches runtime overrides: the rollout bound of a change (docs/overrides.md). */
export const DEFAULT_OVERRIDES_TTL_MS = 10_000;

const rule = (text: string) => ({ error: text });
const originTimeoutSchema = integerIn(1, MAX_ORIGIN_TIMEOUT_MS, "an integer number of ms");
const listSchema = z.strictObject({
  ips: z._default(z.array(z.string(rule("must be an IP address or CIDR string")), rule("must be an array of IP addresses or CIDR ranges")), []),
  // Entries are a key with its source, or (deny only) a bare key: checked one by one by
  // src/gateway/access.ts, so errors name the entry's field (`allow.keys.0.source`).
  keys: z._default(z.array(z.unknown(), rule('must be an array of keys like [{ "key": "vip", "source": "header:x-api-key" }]')), []),
});

/**
 * Where Cloudflare places the Durable Objects Spillway opens (docs/worker.md, "Where keys
 * live"): the values @cloudflare/workers-types lists, as the data-location page describes them.
 */
export const LOCATION_HINTS = ["wnam", "enam", "sam", "weur", "eeur", "apac", "apac-ne", "apac-se", "oc", "afr", "me"] as const;
export const JURISDICTIONS = ["eu", "fedramp", "fedramp-high", "us"] as const;
const quoted = (values: readonly string[]) => values.map((value) => `"${value}"`).join(", ");
/** @internal (zod's types stay out of the published declarations: src/core/validation.ts, Same) */
export const durableObjectsSchema = z.strictObject(
  {
    locationHint: z.optional(z.enum(LOCATION_HINTS, rule(`must be one of ${quoted(LOCATION_HINTS)}`))),
    jurisdiction: z.optional(z.enum(JURISDICTIONS, rule(`must be one of ${quoted(JURISDICTIONS)}`))),
  },
  rule('must be an object like { "jurisdiction": "eu" } or { "locationHint": "weur" }'),
);
/** The config's `durableObjects`: where the Worker's Durable Objects are placed. */
export interface DurableObjectPlacement {
  locationHint?: (typeof LOCATION_HINTS)[number] | undefined;
  jurisdiction?: (typeof JURISDICTIONS)[number] | undefined;
}
type PlacementMatches = Assert<Same<DurableObjectPlacement, z.output<typeof durableObjectsSchema>>>;

/** A composite key has at most this many parts. */
export const MAX_KEY_PARTS = 8;
/** A key source, or a composite key: a list of them, every one required. */
const keySchema = z.union(
  [z.string(), z.array(z.string(rule("must be a key source string"))).check(z.minLength(1, rule("must name at least one key source")), z.maxLength(MAX_KEY_PARTS, rule(`may join at most ${MAX_KEY_PARTS} key sources`)))],
  rule('must be a key source string or an array of them, like ["header:x-api-key", "ip/56"]'),
);
/** `match.headers` values: one value, a list of values, or `true` for "present". */
const headerMatchSchema = z.union([z.string(), z.array(z.string()).check(z.minLength(1, rule("must list at least one value"))), z.literal(true)], rule("must be a value, a list of values, or true (present)"));

/**
 * One route of the gateway, as written.
 * @internal
 */
export const routeSchema = z.strictObject({
  match: z.strictObject(
    {
      path: z.string(rule('must be a path pattern like "/search/*"')),
      methods: z.optional(z.array(z.string(rule("must be a method name")), rule('must be an array of methods like ["GET"]')).check(z.minLength(1, rule("must name at least one method")))),
      // Paths match case-insensitively by default: many origins (Express) route that way.
      caseSensitive: z._default(z.boolean(rule("must be true or false")), false),
      // Plans: the request's Host and fields (src/gateway/match.ts).
      host: z.optional(z.string(rule('must be a host name like "api.example.com" or "*.example.com"'))),
      headers: z.optional(z.record(z.string(), headerMatchSchema, rule('must be an object like { "x-plan": "pro" }'))),
    },
    rule('must be an object like { "path": "/search/*", "methods": ["GET"] }'),
  ),
  key: keySchema,
  fallbackKey: z.optional(keySchema),
  policies: z.optional(z.unknown()),
  onLimit: z._default(z.enum(["reject", "delay"], rule('must be "reject" or "delay"')), "reject"),
  maxDelayMs: z._default(integerIn(0, MAX_DELAY_MS), 0),
  dryRun: z._default(z.boolean(rule("must be true or false")), false),
  originTimeoutMs: z.optional(originTimeoutSchema),
  // Counting what the origin answers: parsed by src/gateway/counting.ts (its errors name the
  // field, a union's would not); spillway.schema.json spells them out (src/node/cli/json-schema.ts).
  count: z.optional(z.unknown()),
  cost: z.optional(z.unknown()),
  estimate: z.optional(z.unknown()),
  // Fields of the request body (src/gateway/body-fields.ts, policies-by.ts): parsed there, naming the field.
  policiesBy: z.optional(z.unknown()),
  maxRequestReadBytes: z.optional(z.unknown()),
});

/**
 * Every top-level field. `policies` and `routes` items are parsed one by one afterwards (their
 * errors then name a policy by its name: `policies.per-minute.limit`).
 * @internal
 */
export const configFileSchema = z.strictObject(
  {
    $schema: z.optional(z.string(rule("must be the path or URL of spillway.schema.json"))),
    policies: z._default(z.array(z.unknown(), rule("must be an array of policies")), []),
    legacyHeaders: z._default(z.boolean(rule("must be true or false")), false),
    origin: z.optional(z.string(rule('must be an http(s) URL like "https://api.example.com"'))),
    routes: z.optional(z.array(z.unknown(), rule("must be an array of routes")).check(z.maxLength(MAX_ROUTES, rule(`may hold at most ${MAX_ROUTES} routes`)))),
    trustProxy: z._default(z.array(z.string(rule("must be an IP address or CIDR string")), rule('must be an array of proxy addresses or CIDR ranges, like ["10.0.0.0/8"]')), []),
    allow: z._default(listSchema, { ips: [], keys: [] }),
    deny: z._default(listSchema, { ips: [], keys: [] }),
    originFeedback: z._default(z.boolean(rule("must be true or false")), false),
    originTimeoutMs: z._default(originTimeoutSchema, DEFAULT_ORIGIN_TIMEOUT_MS),
    // Overrides (src/overrides/): parsed one by one by parseOverrideList, so errors name the entry.
    overrides: z._default(z.array(z.unknown(), rule("must be an array of overrides")), []),
    overridesTtl: z._default(durationSchema, DEFAULT_OVERRIDES_TTL_MS),
    // Every route in dry-run (also SPILLWAY_DRY_RUN=1): a first rollout in front of real traffic.
    dryRun: z._default(z.boolean(rule("must be true or false")), false),
    // The Worker only: where its Durable Objects live (src/worker/placement.ts).
    durableObjects: z._default(durableObjectsSchema, {}),
    // Near-limit and exhausted webhooks (src/notify/): the URL is checked by parseNotify.
    notify: z.optional(notifySchema),
  },
  rule("must be a JSON object"),
);

/** An allow or deny list as written (its keys are checked one by one: src/gateway/access.ts). */
interface AccessListInput {
  ips: string[];
  keys: unknown[];
}

/** The config file's fields, parsed: the gateway part is read from here. */
export interface ConfigFile {
  $schema?: string | undefined;
  policies: unknown[];
  legacyHeaders: boolean;
  origin?: string | undefined;
  routes?: unknown[] | undefined;
  trustProxy: string[];
  allow: AccessListInput;
  deny: AccessListInput;
  originFeedback: boolean;
  originTimeoutMs: number;
  overrides: unknown[];
  overridesTtl: number;
  dryRun: boolean;
  durableObjects: DurableObjectPlacement;
  notify?: NotifyInput | undefined;
}
type ConfigFileMatches = Assert<Same<ConfigFile, z.output<typeof configFileSchema>>>;
/** The gateway fields of a config file, when it sets `origin`. */
export type GatewayFields = Omit<ConfigFile, "$schema" | "policies" | "legacyHeaders" | "overrides" | "overridesTtl" | "dryRun" | "notify" | "durableObjects"> & { origin: string };
