/**
 * JSON.parse keeps the last of two equal keys silently (`{"limit": 3, "limit": 3000000}` is
 * a limit of three million), and a config pasted together from two snippets does exactly
 * that. This scanner finds the first key that an object holds twice, in text that JSON.parse
 * has already accepted, and answers its path (`["policies", 0, "limit"]`).
 *
 * Iterative, not recursive: a deeply nested file must not overflow the stack. Keys are
 * compared decoded, so `"limit"` and `"\u006cimit"` are the same key, as they are to JSON.parse.
 */
export function findDuplicateKey(text: string): (string | number)[] | undefined {
  type Frame = { keys: Set<string>; key: string } | { index: number };
  const frames: Frame[] = [];
  let pos = 0;
  const skipSpace = () => {
    while (pos < text.length && (text[pos] === " " || text[pos] === "\t" || text[pos] === "\n" || text[pos] === "\r")) pos++;
  };
  const readString = (): string => {
    const start = pos++;
    while (pos < text.length && text[pos] !== '"') pos += text[pos] === "\\" ? 2 : 1;
    pos++;
    return JSON.parse(text.slice(start, pos)) as string;
  };
  const path = () => frames.map((frame) => ("keys" in frame ? frame.key : frame.index));
  /** Reads `"key":` into the object frame; true when the object holds that key already. */
  const readKey = (frame: { keys: Set<string>; key: string }): boolean => {
    skipSpace();
    frame.key = readString();
    skipSpace();
    pos++; // the colon
    if (frame.keys.has(frame.key)) return true;
    frame.keys.add(frame.key);
    return false;
  };

  let expectValue = true;
  while (pos < text.length) {
    skipSpace();
    if (pos >= text.length) break;
    const char = text[pos]!;
    if (expectValue) {
      if (char === "{" || char === "[") {
        pos++;
        skipSpace();
        if (text[pos] === (char === "{" ? "}" : "]")) {
          pos++;
          expectValue = false;
          continue;
        }
        if (char === "[") {
          frames.push({ index: 0 });
          continue;
        }
        const frame = { keys: new Set<string>(), key: "" };
        frames.push(frame);
        if (readKey(frame)) return path();
        continue;
      }
      if (char === '"') readString();
      else while (pos < text.length && !",]} \t\n\r".includes(text[pos]!)) pos++; // a number, true, false or null
      expectValue = false;
      continue;
    }
    pos++;
    const frame = frames[frames.length - 1];
    if (!frame) break;
    if (char !== ",") {
      frames.pop(); // } or ]
      continue;
    }
    expectValue = true;
    if ("keys" in frame) {
      if (readKey(frame)) return path();
    } else frame.index++;
  }
  return undefined;
}
