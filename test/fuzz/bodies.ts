import fc from "fast-check";

/**
 * Request bodies for the /v1 fuzz tests, shared by the Node and the Worker suites: mostly
 * near-valid bodies with one or more fields replaced by something hostile (wrong types,
 * huge numbers, unknown fields, deep nesting), plus text that is not JSON at all.
 */

const ROUTES = ["/v1/check", "/v1/peek", "/v1/reset", "/v1/acquire", "/v1/release", "/v1/extend", "/v1/credits"] as const;
export type ApiRoute = (typeof ROUTES)[number];

/** A value nested `depth` levels deep in arrays or objects: the shape that once overflowed a stack. */
export function nested(depth: number, inner: unknown, asObject: boolean): string {
  const open = asObject ? '{"a":' : "[";
  const close = asObject ? "}" : "]";
  return open.repeat(depth) + JSON.stringify(inner) + close.repeat(depth);
}

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(-1, 0, 1.5, 1e9, 1e9 + 1, 1e308, -0, "1m", "", "x".repeat(600), "é".repeat(300), true, null, [], {}),
  fc.string({ maxLength: 40, unit: "binary" }),
  fc.integer(),
  fc.double(),
);

const policyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom("p", "conc", "per-minute", "missing", "", "P"),
  fc.record(
    { name: fc.oneof(fc.constant("inline"), hostileValue), algorithm: fc.oneof(fc.constantFrom("gcra", "sliding-log", "concurrency", "fixed-window", "credits", "leaky"), hostileValue), limit: fc.oneof(fc.integer({ min: 1, max: 10 }), hostileValue), period: fc.oneof(fc.constantFrom("1m", 1000, "soon", 0), hostileValue), burst: hostileValue, lease: hostileValue, failMode: hostileValue, limt: hostileValue, calendar: fc.oneof(fc.constantFrom("day", "week", "month", "year"), hostileValue), timezone: fc.oneof(fc.constantFrom("UTC", "Europe/Paris", "Mars/Base"), hostileValue), refill: fc.oneof(fc.record({ calendar: fc.constantFrom("day", "month", "x"), timezone: fc.constantFrom("UTC", "Nowhere"), to: fc.oneof(fc.integer({ min: 0, max: 10 }), hostileValue) }, { requiredKeys: [] }), hostileValue) },
    { requiredKeys: ["name"] },
  ),
  fc.array(fc.oneof(fc.constant("p"), hostileValue), { maxLength: 20 }),
  hostileValue,
);

/** A JSON object body: each field present or not, valid-looking or hostile. */
const objectBody: fc.Arbitrary<string> = fc
  .record(
    { key: fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), hostileValue), policy: policyValue, cost: hostileValue, mode: fc.oneof(fc.constantFrom("reject", "reserve"), hostileValue), maxWaitMs: hostileValue, leaseMs: hostileValue, leaseId: hostileValue, extra: hostileValue, add: fc.oneof(fc.integer({ min: 0, max: 10 }), hostileValue), set: hostileValue, source: fc.oneof(fc.constantFrom("ip", "header:x-api-key", "header:"), hostileValue) },
    { requiredKeys: [] },
  )
  .map((body) => JSON.stringify(body));

/** A field of an otherwise valid body nested deep (100 … 20,000 levels). */
const deepBody: fc.Arbitrary<string> = fc
  .record({ field: fc.constantFrom("key", "policy", "cost", "mode", "maxWaitMs", "leaseId", "policy.limit", "policy.name", "extra"), depth: fc.integer({ min: 100, max: 20_000 }), asObject: fc.boolean() })
  .map(({ field, depth, asObject }) => {
    const deep = nested(depth, 1, asObject);
    if (field === "policy.limit") return `{"key":"k","policy":{"name":"inline","limit":${deep},"period":"1m"}}`;
    if (field === "policy.name") return `{"key":"k","policy":{"name":${deep},"limit":1,"period":"1m"}}`;
    const fields: Record<string, string> = { key: '"k"', policy: '"p"', [field]: deep };
    return `{${Object.entries(fields).map(([name, value]) => `${JSON.stringify(name)}:${value}`).join(",")}}`;
  });

const notJson: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.constantFrom("", " ", "null", "[]", "1", '"k"', "{", '{"key":', "NaN", "[".repeat(5000), "\u0000"),
);

export const bodyArb: fc.Arbitrary<{ route: ApiRoute; body: string }> = fc.record({
  route: fc.constantFrom(...ROUTES),
  body: fc.oneof({ arbitrary: objectBody, weight: 6 }, { arbitrary: deepBody, weight: 2 }, { arbitrary: notJson, weight: 1 }),
});

/** Policies the fuzzed config names: a rate policy and a concurrency one. */
export const FUZZ_POLICIES = [
  { name: "p", algorithm: "gcra", limit: 1000, period: "1m" },
  { name: "conc", algorithm: "concurrency", limit: 1000, lease: "1s" },
];

/** Body counts: a few thousand per runtime in CI, adjustable with FUZZ_RUNS. */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 2000);

export interface Answer {
  status: number;
  contentType: string | null;
  body: { field?: unknown; detail?: unknown } | null;
}

/** Reads an answer for brokenRule: its status, content type and JSON body (null when it has none). */
export async function answerOf(response: Response): Promise<Answer> {
  const text = await response.text();
  let body: Answer["body"] = null;
  try {
    body = JSON.parse(text) as Answer["body"];
  } catch {
    // A 204 has no body; brokenRule judges the rest.
  }
  return { status: response.status, contentType: response.headers.get("content-type"), body };
}

/**
 * The rule every answer must keep: no 5xx, and a 400 is a problem body whose detail starts
 * with the field it names. Returns what broke, or undefined.
 */
export function brokenRule(answer: Answer): string | undefined {
  if (answer.status >= 500) return `answered ${answer.status}`;
  if (answer.status !== 400) return undefined;
  if (answer.contentType !== "application/problem+json") return `a 400 with content-type ${answer.contentType}`;
  const { field, detail } = answer.body ?? {};
  if (typeof field !== "string" || field === "") return "a 400 that names no field";
  if (typeof detail !== "string" || !detail.startsWith(`${field}: `)) return `a 400 whose detail does not start with its field: ${String(detail)}`;
  if (/Invalid input|expected \w+, received/.test(detail)) return `a 400 in the validator's words: ${detail}`;
  return undefined;
}

/** Sends `runs` generated bodies through `send`; fails on the first whose answer breaks a rule. */
export async function assertGeneratedBodies(send: (route: ApiRoute, body: string) => Promise<Answer>, runs = FUZZ_RUNS): Promise<void> {
  await fc.assert(
    fc.asyncProperty(bodyArb, async ({ route, body }) => {
      const broken = brokenRule(await send(route, body));
      if (broken) throw new Error(`${route} ${body.slice(0, 200)}: ${broken}`);
    }),
    { numRuns: runs },
  );
}
