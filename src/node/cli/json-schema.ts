import * as z from "zod/mini";
import { MAX_KEY_PARTS, MAX_ROUTES, configFileSchema, routeSchema } from "../../config/schema.js";
import { ISO_DATE, overrideSchema } from "../../overrides/parse.js";
import { DURATION_PATTERN, MAX_DURATION_MS } from "../../core/duration.js";
import { ALGORITHMS } from "../../core/types.js";
import { BUDGET_ALGORITHMS, LEASABLE_ALGORITHMS, MAX_LIMIT, MAX_SLIDING_LOG_LIMIT, policySchema } from "../../core/policy.js";

/**
 * spillway.schema.json, generated from the schemas the config parser uses (src/config/schema.ts,
 * the policy schema of src/core/policy.ts), plus what a JSON Schema can say of the parsers'
 * cross-field rules: which fields each algorithm takes, a delayed route's maxDelayMs, routes
 * needing an origin. `npm run build` writes it; a test holds it and the parser to the same verdicts.
 */
export function configJsonSchema(): Record<string, unknown> {
  const file = z.extend(configFileSchema, {
    policies: z.optional(z.array(policySchema)),
    routes: z.optional(z.array(routeSchema).check(z.maxLength(MAX_ROUTES))),
    overrides: z.optional(z.array(overrideSchema)),
  });
  const schema = z.toJSONSchema(file, { io: "input", unrepresentable: "any", target: "draft-2020-12" }) as JsonObject;
  const properties = schema.properties as Record<string, JsonObject>;
  const policy = (properties.policies!.items as JsonObject);
  const policyFields = policy.properties as Record<string, JsonObject>;
  policyFields.period = { ...DURATION, description: "How long the limit counts for (not used by concurrency)." };
  policyFields.lease = { ...DURATION, description: "concurrency only: a lease not released by then expires (default 30s)." };
  policy.allOf = POLICY_RULES;
  const route = properties.routes!.items as JsonObject;
  (route.properties as Record<string, JsonObject>).key = KEY_SOURCE;
  (route.properties as Record<string, JsonObject>).fallbackKey = KEY_SOURCE;
  ((route.properties as Record<string, JsonObject>).match!.properties as Record<string, JsonObject>).path = { type: "string", pattern: "^/", description: 'A path pattern: "/exact", ":name" or "*" for one segment, a trailing "/*" for the rest.' };
  (route.properties as Record<string, JsonObject>).count = COUNT;
  (route.properties as Record<string, JsonObject>).cost = COST;
  (route.properties as Record<string, JsonObject>).estimate = ESTIMATE;
  (route.properties as Record<string, JsonObject>).policiesBy = POLICIES_BY;
  (route.properties as Record<string, JsonObject>).maxRequestReadBytes = MAX_REQUEST_READ_BYTES;
  (route.properties as Record<string, JsonObject>).providerHeaders = PROVIDER_HEADERS;
  route.allOf = ROUTE_RULES;
  const override = properties.overrides!.items as JsonObject;
  const overrideFields = override.properties as Record<string, JsonObject>;
  overrideFields.period = { ...DURATION, description: "The key's own period." };
  overrideFields.expiresAt = { anyOf: [{ type: "integer" }, { type: "string", pattern: ISO_DATE.source }], description: "When the override stops applying: epoch ms or an ISO 8601 date (a real one), in the future and at most 100 years ahead." };
  overrideFields.source = { ...KEY_SOURCE, description: 'The key source it is for, as a route writes its key ("ip", "header:x-api-key", an array for a composite key): only routes keyed by that source see it. Without it, the override is for keys given to /v1/check, RPC and rateLimit().' };
  override.anyOf = [{ required: ["limit"] }, { required: ["burst"] }, { required: ["period"] }];
  // allow/deny keys (src/gateway/access.ts): a key with its source; deny also takes a bare key (every source).
  (((properties.allow!.properties as Record<string, JsonObject>).keys!) as JsonObject).items = SCOPED_KEY;
  (((properties.deny!.properties as Record<string, JsonObject>).keys!) as JsonObject).items = { anyOf: [{ ...EXACT_KEY, description: "Refused whatever key source read it." }, SCOPED_KEY] };
  properties.overridesTtl = { ...DURATION, description: "How long each process or isolate uses a read of the runtime overrides: the rollout bound of a change (default 10s)." };
  for (const [name, description] of Object.entries(DESCRIPTIONS)) properties[name] = { ...properties[name], description };
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: "https://spillway.dev/spillway.schema.json",
    title: "spillway.config.json",
    ...schema,
    dependentRequired: { routes: ["origin"] },
  };
}

type JsonObject = Record<string, unknown>;

const DURATION = {
  anyOf: [
    { type: "string", pattern: DURATION_PATTERN.source },
    { type: "integer", minimum: 1, maximum: MAX_DURATION_MS },
  ],
};

const ONE_SOURCE = "ip|ip/([1-9]|[1-9][0-9]|1[01][0-9]|12[0-8])|path|host|method|cf:(country|asn|colo)|(header|cookie):[!#$%&'*+\\-.^_`|~0-9A-Za-z]+|query:.+|json:[^.]+(\\.[^.]+){0,15}";
const KEY_SOURCE = {
  anyOf: [
    { type: "string", pattern: `^(${ONE_SOURCE}|const:.{1,256})$` },
    { type: "array", items: { type: "string", pattern: `^(${ONE_SOURCE})$` }, minItems: 1, maxItems: MAX_KEY_PARTS, uniqueItems: true },
  ],
  description:
    '"ip", "ip/N" (IPv6 prefix), "header:NAME", "query:NAME", "cookie:NAME", "path", "host", "method", "cf:country", "cf:asn", "cf:colo" (Workers), "json:FIELD" (a dotted path in the JSON body) or "const:VALUE"; an array of them is a composite key (every part required).',
};

/** allow/deny keys are exact: a trailing * (a wildcard in overrides) is refused. */
const EXACT_KEY = { type: "string", minLength: 1, pattern: "[^*]$" };
const SCOPED_KEY = {
  type: "object",
  properties: { key: EXACT_KEY, source: { ...KEY_SOURCE, description: 'The key source the key is for, as a route writes its key ("ip", "header:x-api-key", an array for a composite key): it matches only keys read from that source.' } },
  required: ["key", "source"],
  additionalProperties: false,
};

const STATUS = { anyOf: [{ type: "integer", minimum: 100, maximum: 599 }, { type: "string", pattern: "^[1-5]xx$" }] };
const COUNT = {
  type: "object",
  properties: { status: { type: "array", items: STATUS, minItems: 1 } },
  required: ["status"],
  additionalProperties: false,
  description: 'Count only answers with these statuses (codes or classes like "4xx"): peeked before forwarding, debited on the answer.',
};
const MEASURE = { enum: ["input", "output", "total", "requests", "microdollars"], description: "Tokens in, out or in all; 1 per request; or millionths of a US dollar from \"prices\"." };
const PRICE = {
  type: "object",
  properties: { input: { type: "number", minimum: 0, maximum: 100000 }, output: { type: "number", minimum: 0, maximum: 100000 } },
  required: ["input", "output"],
  additionalProperties: false,
};
const PRICES = { type: "object", additionalProperties: PRICE, minProperties: 1, description: 'USD per million input and output tokens, by model (an answer\'s "model", also without a date suffix); "default" for any other model, else the dearest prices.' };
const COST_VALUE = { type: "integer", minimum: 0, maximum: 1e9 };
const costFrom = (source: string, value: JsonObject, read?: JsonObject) => ({
  type: "object",
  properties: { [source]: value, max: COST_VALUE, missing: COST_VALUE, ...read },
  required: [source],
  additionalProperties: false,
});
/** How far a responseJson answer is read once its client has gone (src/gateway/counting.ts, ReadLimits). */
const READ_LIMITS = {
  maxReadBytes: { type: "integer", minimum: 1024, maximum: 1073741824, description: "Bytes the gateway reads of an answer for its usage on its own account (decoded for it, or read after the client left); default 8388608 (8 MiB)." },
  maxReadMs: { type: "integer", minimum: 1000, maximum: 600000, description: "How long the gateway reads on once the client has left; default 120000 (2 minutes)." },
};
const HEADER_NAME = { type: "string", pattern: "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$" };
const JSON_PATH = { type: "string", pattern: "^[^.]+(\\.[^.]+){0,15}$", maxLength: 256 };
const COST = {
  anyOf: [
    COST_VALUE,
    costFrom("requestHeader", HEADER_NAME),
    costFrom("responseHeader", HEADER_NAME),
    costFrom("responseJson", { type: "string", pattern: "^[^.]+(\\.[^.]+){0,15}$", maxLength: 256 }, READ_LIMITS),
    costFrom("usage", { enum: ["openai", "openai-responses", "anthropic"] }, { ...READ_LIMITS, measure: MEASURE, measures: { type: "object", additionalProperties: MEASURE, description: "Each policy's measure of the answer, by policy name (default: \"measure\")." }, prices: PRICES }),
  ],
  description:
    'What one request costs: a constant, or read from "requestHeader", "responseHeader" or "responseJson" (a dotted path in a JSON answer or an SSE stream\'s data events), clamped to "max"; "missing" when absent or unreadable (default: 1 for "requestHeader"; "max", else 1000000000, for what the answer reports). "usage": a provider\'s own answer format, each policy charged its measure (docs/counting.md, "Usage presets").',
};

const ESTIMATE_FORMS = [
  COST_VALUE,
  { type: "object", properties: { requestHeader: HEADER_NAME, missing: COST_VALUE }, required: ["requestHeader"], additionalProperties: false },
  {
    type: "object",
    properties: {
      requestJson: { anyOf: [JSON_PATH, { type: "array", items: JSON_PATH, minItems: 1, maxItems: 8, uniqueItems: true }], description: "The output bound's dotted path in the JSON body, or a list of them (the first the body has is read), like [\"max_tokens\", \"max_completion_tokens\"]." },
      promptTokensPerByte: { type: "number", minimum: 0, maximum: 1, description: "Tokens added per byte of the body, for the prompt (default 0.25: 4 bytes a token; 0: the output bound alone)." },
      missing: COST_VALUE,
    },
    required: ["requestJson"],
    additionalProperties: false,
  },
];
const ESTIMATE = {
  anyOf: [
    ...ESTIMATE_FORMS,
    { type: "object", properties: { input: { anyOf: ESTIMATE_FORMS }, output: { anyOf: ESTIMATE_FORMS } }, required: ["input", "output"], additionalProperties: false, description: 'A "usage" cost\'s estimate in parts: its input and its output tokens.' },
  ],
  description:
    'Reserve, then settle: with a cost the answer reports, what a request is reserved at before it is forwarded (a constant, a request header, or the JSON body\'s output bound plus its bytes × promptTokensPerByte; "missing" when absent or unreadable, default the cost\'s "missing"); the answer settles the difference.',
};

/** A route's policies: a name, an inline policy, or a list of them (src/core/policy.ts resolvePolicies). */
const POLICY_LIST = { anyOf: [{ type: "string" }, { type: "object" }, { type: "array", minItems: 1, maxItems: 16 }] };
const POLICIES_BY = {
  type: "object",
  properties: {
    json: { ...JSON_PATH, description: 'The body field whose value picks the policies, like "model".' },
    policies: { type: "object", additionalProperties: POLICY_LIST, minProperties: 1, maxProperties: 256, description: "Each value's policies, added to the route's own." },
    default: { ...POLICY_LIST, description: "The policies of a value not listed (default: the route's own alone)." },
  },
  required: ["json", "policies"],
  additionalProperties: false,
  description: "Policies picked by a field of the JSON body (the model): a request without the field, or naming it twice, is refused (400).",
};

const MAX_REQUEST_READ_BYTES = { type: "integer", minimum: 1024, maximum: 67108864, description: "How much of a request body the route reads for its fields (json: keys, a requestJson estimate, policiesBy), held before forwarding; a longer body has no fields. Default 1048576 (1 MiB)." };

const POLICY_NAME = { type: "string", minLength: 1 };
const PROVIDER_HEADERS = {
  type: "object",
  properties: { style: { enum: ["openai", "anthropic"] }, requests: POLICY_NAME, tokens: POLICY_NAME, inputTokens: POLICY_NAME, outputTokens: POLICY_NAME },
  required: ["style"],
  additionalProperties: false,
  description: 'The provider\'s own rate-limit fields beside the RateLimit ones (x-ratelimit-* or anthropic-ratelimit-*), each family from the policy named; every 429 also carries retry-after-ms.',
};

const has = (field: string, value: unknown) => ({ properties: { [field]: Array.isArray(value) ? { enum: value } : { const: value } }, required: [field] });
const absent = (...fields: string[]) => ({ not: { anyOf: fields.map((field) => ({ required: [field] })) } });

const POLICY_RULES = [
  // concurrency takes a lease and no period; credits neither (a refill has its own calendar);
  // every other algorithm needs a period (fixed-window: or a calendar) and takes no lease.
  {
    if: has("algorithm", "concurrency"),
    then: absent("period", "burst", "local", "refill"),
    else: {
      if: has("algorithm", "credits"),
      then: absent("period", "burst", "local", "lease"),
      else: { anyOf: [{ required: ["period"] }, { required: ["calendar"] }], ...absent("lease", "refill") },
    },
  },
  // Calendar windows are fixed windows; a calendar replaces the period; a time zone needs a calendar.
  { if: { not: has("algorithm", "fixed-window") }, then: absent("calendar", "timezone") },
  { if: { required: ["calendar"] }, then: absent("period"), else: absent("timezone") },
  // burst is gcra's and token-bucket's capacity.
  { if: has("algorithm", ["fixed-window", "sliding-window", "sliding-log"]), then: absent("burst") },
  { if: has("algorithm", "sliding-log"), then: { properties: { limit: { maximum: MAX_SLIDING_LOG_LIMIT } } } },
  // Only fixed-window and credits count past 1e9 (money budgets: src/core/policy.ts MAX_BUDGET_LIMIT); gcra is the default.
  { if: has("algorithm", [...BUDGET_ALGORITHMS]), else: { properties: { limit: { maximum: MAX_LIMIT } } } },
  // Token batches (local.share above 0) only for the algorithms that can lend them; gcra is the default.
  {
    if: { anyOf: [{ not: { required: ["algorithm"] } }, has("algorithm", ALGORITHMS.filter((name) => !LEASABLE_ALGORITHMS.has(name)))] },
    then: { properties: { local: { properties: { share: { const: 0 } } } } },
  },
];

const ROUTE_RULES = [
  // Counted answers (count, or a cost read from the answer) cannot be reserved for: reject only.
  { if: { anyOf: [{ required: ["count"] }, { required: ["cost"], properties: { cost: { anyOf: [{ required: ["responseHeader"] }, { required: ["responseJson"] }, { required: ["usage"] }] } } }] }, then: { properties: { onLimit: { const: "reject" } } } },
  { if: has("onLimit", "delay"), then: { required: ["maxDelayMs"], properties: { maxDelayMs: { minimum: 1 } } }, else: { properties: { maxDelayMs: { const: 0 } } } },
];

const DESCRIPTIONS: Record<string, string> = {
  policies: "The named policies requests and routes refer to.",
  legacyHeaders: "Add X-RateLimit-Limit/Remaining/Reset next to the RateLimit fields.",
  origin: "The gateway's origin: requests that are not Spillway's own are forwarded here.",
  routes: "Gateway routes: which requests are limited, by which key and policies.",
  trustProxy: "Proxies whose X-Forwarded-For is believed (IP addresses or CIDR ranges).",
  allow: 'Never limited: "ips" (addresses, CIDR ranges) and "keys", each { "key", "source" }: the key only when read from that source.',
  deny: 'Always refused (403), checked before allow: "ips" and "keys", each { "key", "source" }, or a bare key refused from every source.',
  originFeedback: "An origin's 429 with Retry-After pauses that key for every caller.",
  originTimeoutMs: "How long the origin may stay silent before the client gets a 504 (default 30000).",
  overrides: "Per-key limits: { policy, key, source?, limit?, burst?, period?, expiresAt? }; a trailing * in key is a prefix wildcard; source scopes it to a route's key source (docs/overrides.md).",
  dryRun: "Every route in dry-run: nothing is blocked, denials are reported in headers and logs.",
  durableObjects: 'The Worker only: where every Durable Object it opens lives. "locationHint" (best effort, where it is created) and "jurisdiction" (where it runs and stores data, like "eu").',
  notify: "Webhooks: { url, events? } POSTs { event, key, policy, limit, remaining, resetMs, at } once per key, policy, window and event (warning: past warnAt; exhausted: the first denial).",
};
