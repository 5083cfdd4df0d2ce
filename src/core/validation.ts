import * as z from "zod/mini";
import type * as zc from "zod/v4/core";

/**
 * Bad input from a user: a body, a config file, a flag or an RPC argument.
 * `field` is the dotted path of the offending value (`policies.per-minute.limit`),
 * so the HTTP layer can answer 400 with a detail that names it.
 */
export class ValidationError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(field ? `${field}: ${message}` : message);
    this.name = "ValidationError";
    this.field = field;
  }
}

/** Joins a field prefix and a sub-path: `joinPath("policy", ["limit"])` → `policy.limit`. */
export function joinPath(prefix: string, path: readonly PropertyKey[]): string {
  return [prefix, ...path.map(String)].filter((part) => part !== "").join(".");
}

/**
 * Parses `value` with a zod schema and throws a ValidationError naming the first bad field,
 * with the rule and the value that broke it.
 */
export function parseWith<S extends zc.$ZodType>(schema: S, value: unknown, prefix: string): zc.output<S> {
  const result = z.safeParse(schema, value, { reportInput: true });
  if (result.success) return result.data;
  const issues = result.error.issues;
  // An unknown key comes first: it is most often a typo of a field that is then missing,
  // and "limt: is not a known field" says more than "limit: is required".
  const issue = issues.find((one) => one.code === "unrecognized_keys") ?? issues[0]!;
  let path = issue.path;
  let message = issue.message;
  if (issue.code === "unrecognized_keys") {
    path = [...path, issue.keys[0]!];
    message = "is not a known field";
    const missing = issues.find((one) => one.code === "invalid_type" && one.input === undefined && one.path.length === issue.path.length + 1 && issue.path.every((part, i) => part === one.path[i]));
    if (missing) message += ` (did you mean ${JSON.stringify(missing.path[missing.path.length - 1])}?)`;
  } else if (issue.code === "invalid_type" && (message.startsWith("Invalid input") || message === "Invalid input")) {
    // A schema without its own message: say it in Spillway's words, not the validator's.
    message = `must be ${EXPECTED[issue.expected] ?? issue.expected}, got ${describeValue(issue.input)}`;
  } else if ("input" in issue && !message.includes(", got ")) {
    message = `${message}, got ${describeValue(issue.input)}`;
  }
  throw new ValidationError(joinPath(prefix, path), message);
}

const EXPECTED: Record<string, string> = { object: "a JSON object", array: "an array", string: "a string", number: "a number", boolean: "true or false" };

/** An integer in [min, max], with a message that states the rule. */
export function integerIn(min: number, max: number, what = "an integer") {
  const rule = `must be ${what} from ${min} to ${max}`;
  return z.int({ error: rule }).check(z.minimum(min, { error: rule }), z.maximum(max, { error: rule }));
}

/** Renders a user's value for an error message without dumping huge inputs. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  const text = preview(value, 3);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * JSON-like text of a value, at most `depth` levels deep and a few items per level. Never
 * JSON.stringify a user's value whole: a body nested 10,000 levels deep overflows its stack,
 * and a 64 KiB one would be rendered only to keep 80 characters of it.
 */
function preview(value: unknown, depth: number): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 80 ? value.slice(0, 80) : value);
  if (value === null || typeof value !== "object") return String(value);
  if (depth === 0) return Array.isArray(value) ? "[...]" : "{...}";
  if (Array.isArray(value)) {
    const items = value.slice(0, 4).map((item) => preview(item, depth - 1));
    return `[${items.join(",")}${value.length > 4 ? ",..." : ""}]`;
  }
  const entries = Object.entries(value);
  const items = entries.slice(0, 4).map(([name, item]) => `${JSON.stringify(name)}:${preview(item, depth - 1)}`);
  return `{${items.join(",")}${entries.length > 4 ? ",..." : ""}}`;
}
