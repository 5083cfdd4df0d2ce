/**
 * One request field read from node:http's rawHeaders (`headers` drops repeats), as a web
 * Headers object reads it: repeated fields joined by ", " (Cookie lines by "; ", as node:http
 * joins them: a cookie pair never holds ";"). `lowerName` is lower-case.
 */
export function rawField(raw: readonly string[], lowerName: string): string | undefined {
  let value: string | undefined;
  const separator = lowerName === "cookie" ? "; " : ", ";
  for (let i = 0; i < raw.length; i += 2) {
    const field = raw[i]!;
    if (field.length === lowerName.length && field.toLowerCase() === lowerName) value = value === undefined ? raw[i + 1]! : `${value}${separator}${raw[i + 1]!}`;
  }
  return value;
}

/** Whether the field `lowerName` arrived on more than one line of rawHeaders. */
export function rawFieldRepeated(raw: readonly string[], lowerName: string): boolean {
  let lines = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const field = raw[i]!;
    if (field.length === lowerName.length && field.toLowerCase() === lowerName && ++lines > 1) return true;
  }
  return false;
}
