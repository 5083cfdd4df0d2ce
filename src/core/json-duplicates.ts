/**
 * JSON.parse keeps the last of two equal keys silently (`{"limit": 3, "limit": 3000000}` is
 * a limit of three million), and a config pasted together from two snippets does exactly
 * that. This scanner finds the first key that an object holds twice, in text that JSON.parse
 * has already accepted, and answers its path (`["policies", 0, "limit"]`).
 *
 * Iterative, not recursive: a deeply nested file must not overflow the stack. Keys are
 * compared decoded, so `"limit"` and `"\u006cimit"` are the same key, as they are to JSON.parse.
 * It runs on every /v1 body (src/http/api.ts), so it reads char codes, allocates no closure
 * per call and decodes a key with JSON.parse only when it holds an escape.
 */
export function findDuplicateKey(text: string): (string | number)[] | undefined {
  const frames: Frame[] = [];
  const length = text.length;
  let pos = 0;
  let expectValue = true;
  while (pos < length) {
    pos = afterSpace(text, pos);
    if (pos >= length) break;
    const code = text.charCodeAt(pos);
    if (expectValue) {
      if (code === OPEN_BRACE || code === OPEN_BRACKET) {
        pos = afterSpace(text, pos + 1);
        if (text.charCodeAt(pos) === code + 2) {
          // } or ]: an empty one
          pos++;
          expectValue = false;
          continue;
        }
        if (code === OPEN_BRACKET) {
          frames.push({ index: 0 });
          continue;
        }
        const frame: ObjectFrame = { keys: [], key: "" };
        frames.push(frame);
        pos = readKey(text, pos, frame);
        if (pos < 0) return pathOf(frames);
        continue;
      }
      pos = code === QUOTE ? afterString(text, pos) : afterLiteral(text, pos);
      expectValue = false;
      continue;
    }
    pos++;
    const frame = frames[frames.length - 1];
    if (!frame) break;
    if (code !== COMMA) {
      frames.pop(); // } or ]
      continue;
    }
    expectValue = true;
    if ("keys" in frame) {
      pos = readKey(text, pos, frame);
      if (pos < 0) return pathOf(frames);
    } else frame.index++;
  }
  return undefined;
}

/** An object's keys so far (an array while it has a handful: cheaper than a Set) and the key being read. */
type ObjectFrame = { keys: string[] | Set<string>; key: string };
type Frame = ObjectFrame | { index: number };

const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;

const isSpace = (code: number) => code === 32 || code === 9 || code === 10 || code === 13;

function afterSpace(text: string, pos: number): number {
  while (isSpace(text.charCodeAt(pos))) pos++;
  return pos;
}

/** The position after the string that starts (with its quote) at pos. */
function afterString(text: string, pos: number): number {
  const length = text.length;
  pos++;
  while (pos < length) {
    const code = text.charCodeAt(pos);
    if (code === QUOTE) return pos + 1;
    pos += code === BACKSLASH ? 2 : 1;
  }
  return pos;
}

/** The position after a number, true, false or null. */
function afterLiteral(text: string, pos: number): number {
  const length = text.length;
  for (let code = text.charCodeAt(pos); pos < length && code !== COMMA && code !== CLOSE_BRACKET && code !== CLOSE_BRACE && !isSpace(code); code = text.charCodeAt(++pos));
  return pos;
}

/** Reads `"key":` at pos into the frame: the position after the colon, or -1 when the object holds that key already. */
function readKey(text: string, pos: number, frame: ObjectFrame): number {
  const start = afterSpace(text, pos);
  const end = afterString(text, start);
  const raw = text.slice(start + 1, end - 1);
  const key = raw.includes("\\") ? (JSON.parse(text.slice(start, end)) as string) : raw;
  frame.key = key;
  const keys = frame.keys;
  if (Array.isArray(keys)) {
    if (keys.includes(key)) return -1;
    // A large object is looked up by hash, not by walking its keys.
    if (keys.length < 16) keys.push(key);
    else frame.keys = new Set([...keys, key]);
  } else {
    if (keys.has(key)) return -1;
    keys.add(key);
  }
  return afterSpace(text, end) + 1; // past the colon
}

function pathOf(frames: Frame[]): (string | number)[] {
  return frames.map((frame) => ("keys" in frame ? frame.key : frame.index));
}
