/**
 * The gateway's path policy (docs/gateway.md, "Path policy"): one pure function that both
 * runtimes run on the path exactly as the client sent it.
 *
 * A rate limit in front of an origin only holds if every spelling the origin serves as
 * `/api/x` is counted as `/api/x`. Origins disagree on spellings: many decode `%2F`, Tomcat
 * and Spring drop `;params`, Express routes case-insensitively, IIS drops trailing dots,
 * some apply NFKC. So:
 *
 * - What has no safe canonical form is refused (the caller answers 400): invalid
 *   percent-encoding, an encoded `/` or `\` or a literal `\`, control bytes raw or encoded,
 *   bytes that are not UTF-8, `%XX` left after decoding (double encoding), characters that
 *   fold (NFKC) to `/` or `\`, and segments an origin could read as empty, `.` or `..`
 *   (`..;`, `.%20`, `...`).
 * - The canonical path (`path`) is what the origin gets: RFC 3986 normalization (unreserved
 *   characters decoded, hex digits upper-cased, dot segments resolved, never above the root)
 *   plus merged slashes. Everything else stays as the client wrote it (`;params`, case,
 *   encoded non-ASCII), so the origin serves what it would have served.
 * - Routes compare that path segment by segment after folding each segment the way some
 *   origin might: percent-decoded, NFKC, `;params` dropped, trailing dots and spaces dropped,
 *   and (unless a route is case-sensitive) lower-cased. Folding only ever makes a route match
 *   more spellings: a doubtful request is counted, never let through uncounted.
 */
export interface CanonicalPath {
  /** The path forwarded to the origin: starts with "/", keeps a trailing "/". */
  path: string;
  /** Folded segments (case kept), empty ones dropped: what case-sensitive routes compare. */
  segments: string[];
  /** The same, lower-cased: what routes compare by default. */
  lowerSegments: string[];
}

/** Why a path was refused, in words for a 400's detail. */
export interface RefusedPath {
  refused: string;
}

const HEX = "0123456789ABCDEF";

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const upper = code & ~32;
  return upper >= 65 && upper <= 70 ? upper - 55 : -1;
}

/** RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~". */
function isUnreserved(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 45 || code === 46 || code === 95 || code === 126;
}

const isControl = (code: number) => code < 0x20 || code === 0x7f;

/**
 * One raw segment in RFC 3986 normal form: unreserved characters decoded, the other
 * percent-encodings upper-cased; a RefusedPath for what no origin can be trusted to read
 * the way we do.
 */
function normalizeEncoding(part: string): string | RefusedPath {
  let plain = true;
  for (let i = 0; i < part.length; i++) {
    const code = part.charCodeAt(i);
    if (code === 37 /* % */ || code === 92 /* \ */ || isControl(code)) {
      plain = false;
      break;
    }
  }
  if (plain) return part;
  let out = "";
  for (let i = 0; i < part.length; i++) {
    const code = part.charCodeAt(i);
    if (code === 92) return { refused: 'it holds a "\\", which some origins read as "/"' };
    if (isControl(code)) return { refused: "it holds a control character" };
    if (code !== 37) {
      out += part[i];
      continue;
    }
    const high = hexValue(part.charCodeAt(i + 1));
    const low = hexValue(part.charCodeAt(i + 2));
    if (high < 0 || low < 0) return { refused: 'it holds a "%" that is not followed by two hex digits' };
    const byte = high * 16 + low;
    if (byte === 0x2f) return { refused: 'it holds an encoded "/" (%2F), which some origins decode into a path separator' };
    if (byte === 0x5c) return { refused: 'it holds an encoded "\\" (%5C), which some origins decode into a path separator' };
    if (isControl(byte)) return { refused: "it holds an encoded control character" };
    out += isUnreserved(byte) ? String.fromCharCode(byte) : `%${HEX[high]}${HEX[low]}`;
    i += 2;
  }
  return out;
}

/** Non-ASCII, or a "%" (left after decoding: an origin that decodes twice would read it). */
const NEEDS_DECODING = /[%\u0080-\uffff]/;
const FOLDS_TO_SEPARATOR = /[/\\\u0000-\u001f\u007f]/;
const ENCODED_BYTE = /%[0-9A-Fa-f]{2}/;

/**
 * A normalized segment as the most liberal origin reads it: decoded, NFKC, `;params` and
 * trailing dots and spaces dropped. Case is kept (the caller lower-cases).
 */
function foldSegment(segment: string): string | RefusedPath {
  let folded = segment;
  if (NEEDS_DECODING.test(segment)) {
    try {
      folded = decodeURIComponent(segment);
    } catch {
      return { refused: "its percent-encoded bytes are not UTF-8" };
    }
    if (ENCODED_BYTE.test(folded)) return { refused: 'it is percent-encoded twice (a "%25" that decodes to "%XX")' };
    folded = folded.normalize("NFKC");
    if (FOLDS_TO_SEPARATOR.test(folded)) return { refused: 'it holds a character that Unicode folds (NFKC) into "/", "\\" or a control character' };
    if (ENCODED_BYTE.test(folded)) return { refused: 'it holds characters that Unicode folds (NFKC) into a "%XX" escape' };
  }
  const semicolon = folded.indexOf(";");
  if (semicolon >= 0) folded = folded.slice(0, semicolon);
  let end = folded.length;
  while (end > 0 && (folded.charCodeAt(end - 1) === 46 || folded.charCodeAt(end - 1) === 32)) end--;
  // "..;", ".%20", "..." or ";x": an origin may read these as "..", "." or an empty segment.
  if (end === 0) return { refused: `it has a segment that some origins read as ".", ".." or empty (${JSON.stringify(segment.slice(0, 40))})` };
  return end === folded.length ? folded : folded.slice(0, end);
}

/**
 * The canonical form of a raw request path (no query), or why it has none.
 *
 * @example canonicalPath("//API;v=1/./x/") // { path: "/API;v=1/x/", segments: ["API", "x"], lowerSegments: ["api", "x"] }
 * @example canonicalPath("/api%2Fx") // { refused: 'it holds an encoded "/" (%2F), ...' }
 */
export function canonicalPath(rawPath: string): CanonicalPath | RefusedPath {
  if (PLAIN_PATH.test(rawPath)) return plainPath(rawPath);
  return resolvePath(rawPath);
}

/**
 * Segments of unreserved characters that neither start nor end with "." (so no dot segment,
 * no trailing dot to fold, nothing to decode), no empty segment: the usual path is its own
 * canonical form, and its segments are its own folded ones. resolvePath answers the same for
 * it (a test holds the two equal); this only skips the work.
 */
const PLAIN_PATH = /^(?:\/[\w~-](?:[\w.~-]*[\w~-])?)*\/?$/;
const HAS_UPPER = /[A-Z]/;

function plainPath(rawPath: string): CanonicalPath {
  const segments = rawPath.split("/");
  segments.shift();
  if (segments[segments.length - 1] === "") segments.pop();
  return { path: rawPath, segments, lowerSegments: HAS_UPPER.test(rawPath) ? segments.map((segment) => segment.toLowerCase()) : segments };
}

/** canonicalPath for any path: dot segments, merged slashes, decoding and folding, refusals. */
export function resolvePath(rawPath: string): CanonicalPath | RefusedPath {
  if (rawPath.charCodeAt(0) !== 47) return { refused: 'it does not start with "/"' };
  const parts = rawPath.split("/");
  // Dot segments first, with empty segments still in place, then slashes merged: the order
  // of RFC 3986 and of Envoy (normalize_path, then merge_slashes), and what URL parsing
  // does on Node before the gateway sees a path; `/a//../b` is `/a/b` on either runtime.
  // A segment refused here is only reported if no ".." removes it.
  const forwarded: string[] = [];
  const folded: (string | RefusedPath)[] = [];
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i]!;
    const normal = part === "" ? "" : normalizeEncoding(part);
    if (normal === "." || normal === "..") {
      if (normal === ".." && forwarded.length > 0) {
        forwarded.pop();
        folded.pop();
      }
      continue;
    }
    forwarded.push(typeof normal === "string" ? normal : part);
    folded.push(typeof normal !== "string" ? normal : normal === "" ? "" : foldSegment(normal));
  }
  const segments: string[] = [];
  const kept: string[] = [];
  for (let i = 0; i < folded.length; i++) {
    const segment = folded[i]!;
    if (typeof segment !== "string") return segment;
    if (segment === "") continue;
    segments.push(segment);
    kept.push(forwarded[i]!);
  }
  // A trailing "/" is kept (`/a/`, `/a/b/..`): some origins tell it apart.
  const last = parts[parts.length - 1]!;
  const trailingSlash = last === "" || last === "." || last === ".." || /^(?:%2e|\.){1,2}$/i.test(last);
  const path = kept.length === 0 ? "/" : `/${kept.join("/")}${trailingSlash ? "/" : ""}`;
  return { path, segments, lowerSegments: segments.map((segment) => segment.toLowerCase()) };
}

/**
 * A literal segment of a route pattern, folded as request segments are (case kept), or why no
 * request could ever match it: a pattern cannot name what the policy refuses or drops.
 */
export function patternSegment(part: string): string | RefusedPath {
  const normal = normalizeEncoding(part);
  if (typeof normal !== "string") return normal;
  if (normal === "." || normal === "..") return { refused: "has a dot segment (. or ..), which requests never keep" };
  const folded = foldSegment(normal);
  if (typeof folded !== "string") return folded;
  if (folded !== decodeURIComponent(normal).normalize("NFKC")) {
    return { refused: `has a segment ${JSON.stringify(part)} that requests never spell: ";params" and trailing dots or spaces are dropped before matching` };
  }
  return folded;
}

export const isRefused = <T>(result: T | RefusedPath): result is RefusedPath => typeof result === "object" && result !== null && "refused" in result;

/**
 * The path of an absolute URL string exactly as it is written: `new URL()` would resolve dot
 * segments and read "\" as "/" before the policy could see them (workerd hands the Worker
 * the request line's path unchanged).
 */
export function rawPathOf(url: string): string {
  const authority = url.indexOf("//");
  let end = url.length;
  const query = url.indexOf("?");
  if (query >= 0) end = query;
  const fragment = url.indexOf("#");
  if (fragment >= 0 && fragment < end) end = fragment;
  const start = url.indexOf("/", authority < 0 ? 0 : authority + 2);
  return start < 0 || start >= end ? "/" : url.slice(start, end);
}
