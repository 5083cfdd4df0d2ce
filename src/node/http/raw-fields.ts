/**
 * One request field read from node:http's rawHeaders (`headers` drops repeats), as a web
 * Headers object reads it: repeated fields joined by ", ". `lowerName` is lower-case.
 */
export function rawField(raw: readonly string[], lowerName: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const field = raw[i]!;
    if (field.length === lowerName.length && field.toLowerCase() === lowerName) value = value === undefined ? raw[i + 1]! : `${value}, ${raw[i + 1]!}`;
  }
  return value;
}
