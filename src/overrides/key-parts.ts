/**
 * Joins a composite key's values (docs/overrides.md, "Composite keys"): each value with `\`
 * written `\\` and `|` written `\|`, joined by `|`. `["acme", "203.0.113.9"]` is
 * `acme|203.0.113.9`; no two different lists of values join to one key. Overrides and
 * allow/deny lists match this form; the gateway and rateLimit() both join with it.
 *
 * @example joinKeyParts(["a|b", "c"]) // "a\\|b|c"
 */
export function joinKeyParts(values: readonly string[]): string {
  let joined = "";
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    const escaped = value.includes("\\") || value.includes("|") ? value.replaceAll("\\", "\\\\").replaceAll("|", "\\|") : value;
    joined = i === 0 ? escaped : `${joined}|${escaped}`;
  }
  return joined;
}

/**
 * The values joinKeyParts joined, back apart.
 *
 * @example splitKeyParts("a\\|b|c") // ["a|b", "c"]
 */
export function splitKeyParts(joined: string): string[] {
  const values: string[] = [];
  let value = "";
  for (let i = 0; i < joined.length; i++) {
    const char = joined[i]!;
    if (char === "\\" && i + 1 < joined.length) value += joined[++i];
    else if (char === "|") {
      values.push(value);
      value = "";
    } else value += char;
  }
  values.push(value);
  return values;
}
