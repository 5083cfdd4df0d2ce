import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalPath, isRefused, rawPathOf, resolvePath } from "../../../src/http/path.js";
import { findRoute, keyPathOf, parsePathPattern } from "../../../src/gateway/routes.js";
import { RUNS } from "../core/property-helpers.js";

const canonical = (raw: string) => {
  const result = canonicalPath(raw);
  if (isRefused(result)) throw new Error(`${raw} was refused: ${result.refused}`);
  return result;
};
const refusal = (raw: string) => {
  const result = canonicalPath(raw);
  return isRefused(result) ? result.refused : undefined;
};

describe("canonicalPath: what the origin gets and what routes compare", () => {
  it.each([
    // raw path, forwarded path, folded lower-case segments
    ["/", "/", []],
    ["/api/x", "/api/x", ["api", "x"]],
    ["/api/x/", "/api/x/", ["api", "x"]],
    ["//api///x//", "/api/x/", ["api", "x"]],
    ["/API/x", "/API/x", ["api", "x"]],
    ["/Api/x", "/Api/x", ["api", "x"]],
    ["/api;p/x", "/api;p/x", ["api", "x"]],
    ["/api;jsessionid=1;x=2/x", "/api;jsessionid=1;x=2/x", ["api", "x"]],
    ["/api./x", "/api./x", ["api", "x"]],
    ["/api%20/x", "/api%20/x", ["api", "x"]],
    ["/api%2e/x", "/api./x", ["api", "x"]],
    ["/%61pi/x", "/api/x", ["api", "x"]],
    ["/%EF%BD%81pi/x", "/%EF%BD%81pi/x", ["api", "x"]],
    ["/%ef%bd%81pi/x", "/%EF%BD%81pi/x", ["api", "x"]],
    ["/a/./b/../c", "/a/c", ["a", "c"]],
    ["/a/%2e%2E/c", "/c", ["c"]],
    ["/../../api/x", "/api/x", ["api", "x"]],
    ["/a/b/..", "/a/", ["a"]],
    ["/a/.", "/a/", ["a"]],
    ["/caf%C3%A9", "/caf%C3%A9", ["café"]],
    ["/files/report.v2.pdf", "/files/report.v2.pdf", ["files", "report.v2.pdf"]],
    ["/q/a%2Bb%40c", "/q/a%2Bb%40c", ["q", "a+b@c"]],
    ["/100%25off", "/100%25off", ["100%off"]],
    ["/~user/.well-known/x", "/~user/.well-known/x", ["~user", ".well-known", "x"]],
  ])("%j is forwarded as %j and matched as %j", (raw, path, lower) => {
    const result = canonical(raw);
    expect(result.path).toBe(path);
    expect(result.lowerSegments).toEqual(lower);
  });

  it("keeps case in `segments` for case-sensitive routes", () => {
    expect(canonical("/API;v=1/X.").segments).toEqual(["API", "X"]);
  });

  it.each([
    ["/api%2Fx", "%2F"],
    ["/api%2fx", "%2F"],
    ["/%2Fapi/x", "%2F"],
    ["/api%5Cx", "%5C"],
    ["/api\\x", '"\\"'],
    ["/api%252Fx", "twice"],
    ["/api%25%32%46x", "twice"],
    ["/api%00/x", "control"],
    ["/api%0a/x", "control"],
    ["/api%7F/x", "control"],
    ["/api\u0000/x", "control"],
    ["/api\t/x", "control"],
    ["/api%/x", "two hex digits"],
    ["/api%G1/x", "two hex digits"],
    ["/api%4", "two hex digits"],
    ["/api%FF/x", "not UTF-8"],
    ["/api/..;/admin", '".", ".." or empty'],
    ["/api/.%20/x", '".", ".." or empty'],
    ["/api/.../x", '".", ".." or empty'],
    ["/api/;x/y", '".", ".." or empty'],
    ["/api%EF%BC%8Fx", "NFKC"], // fullwidth solidus folds to "/"
    ["/api%EF%BC%BCx", "NFKC"], // fullwidth reverse solidus folds to "\"
    ["/api/%EF%BC%8E%EF%BC%8E/x", '".", ".." or empty'], // fullwidth dots fold to ".."
    ["/api%EF%BC%85%EF%BC%92%EF%BC%A6x", "%XX"], // fullwidth "%2F"
    ["api/x", 'start with "/"'],
  ])("refuses %j (%s)", (raw, reason) => {
    expect(refusal(raw)).toContain(reason);
  });
});

describe("every spelling of /api/x an origin may serve is counted by the /api/* route, or refused", () => {
  const routes = [{ pattern: parsePathPattern("/api/*") as Exclude<ReturnType<typeof parsePathPattern>, string>, path: "/api/*" }];
  const bypasses = ["/API/x", "/Api/x", "/api%2Fx", "/api%252Fx", "/%2Fapi/x", "/api;p/x", "/api./x", "/api%00/x", "/api%20/x", "/api%5Cx", "/api%/x", "/%EF%BD%81pi/x"];

  it.each(bypasses)("%s", (raw) => {
    const result = canonicalPath(raw);
    if (isRefused(result)) return;
    expect(findRoute(routes, "GET", result)?.path).toBe("/api/*");
  });
});

describe("route patterns under the path policy", () => {
  const pattern = (text: string, caseSensitive = false) => parsePathPattern(text, caseSensitive);
  const matches = (text: string, raw: string, caseSensitive = false) => {
    const parsed = pattern(text, caseSensitive);
    if (typeof parsed === "string") throw new Error(parsed);
    return findRoute([{ pattern: parsed }], "GET", canonical(raw)) !== undefined;
  };

  it("matches case-insensitively unless the route is caseSensitive", () => {
    expect(matches("/Admin/*", "/ADMIN/x")).toBe(true);
    expect(matches("/Admin/*", "/admin/x", true)).toBe(false);
    expect(matches("/Admin/*", "/Admin;v=1/x", true)).toBe(true);
  });

  it("gives the path key the folded segments, so spellings share one budget", () => {
    const parsed = pattern("/files/:name") as Exclude<ReturnType<typeof parsePathPattern>, string>;
    const keys = ["/files/A.txt", "/FILES/a.txt.", "/files/a.txt;v=1", "//files/%61.txt"].map((raw) => keyPathOf(parsed, canonical(raw)));
    expect(new Set(keys)).toEqual(new Set(["/files/a.txt"]));
    const sensitive = pattern("/files/:name", true) as Exclude<ReturnType<typeof parsePathPattern>, string>;
    expect(keyPathOf(sensitive, canonical("/files/A.txt"))).toBe("/files/A.txt");
  });

  it.each([
    ["/api%2Fx/*", /encoded "\/"/],
    ["/api;v=1/*", /never spell/],
    ["/api./*", /never spell/],
    ["/a/../b", /dot segment/],
    ["/a%/b", /two hex digits/],
  ])("refuses the pattern %j", (text, message) => {
    expect(pattern(text)).toMatch(message);
  });
});

describe("rawPathOf", () => {
  it.each([
    ["http://gw/api/../x?q=/a", "/api/../x"],
    ["https://gw:8443/a\\b#f", "/a\\b"],
    ["http://gw", "/"],
    ["http://gw?x=/y", "/"],
    ["http://gw/", "/"],
  ])("%j has the raw path %j", (url, path) => {
    expect(rawPathOf(url)).toBe(path);
  });
});


describe("canonicalPath properties", () => {
  // Raw paths built from the pieces that make paths tricky (each valid in a request line).
  const piece = fc.constantFrom("/", "//", "a", "A", "api", ".", "..", "%2e", "%2E%2e", "%2F", "%5C", "%25", "%41", "%7e", ";", ";p=1", "%", "%00", "%20", "%EF%BD%81", "%EF%BC%8F", "%C3%A9", "%FF", "x.", "-_~");
  const rawPath = fc.array(piece, { maxLength: 10 }).map((pieces) => `/${pieces.join("")}`);

  it("is idempotent: the path the origin gets canonicalizes to itself and matches the same", () => {
    fc.assert(
      fc.property(rawPath, (raw) => {
        const first = canonicalPath(raw);
        if (isRefused(first)) return;
        expect(canonicalPath(first.path)).toEqual(first);
        expect(first.path).not.toMatch(/\/\/|\/\.\.?(?:\/|$)|%2F|%5C/i);
      }),
      RUNS,
    );
  });

  it("ends the same on Node (where URL parsing resolves dot segments first) as on the Worker (the raw path)", () => {
    fc.assert(
      fc.property(rawPath, (raw) => {
        const worker = canonicalPath(raw);
        const node = canonicalPath(new URL(`http://gw${raw}`).pathname);
        if (isRefused(worker)) expect(isRefused(node)).toBe(true);
        else expect(node).toEqual(worker);
      }),
      RUNS,
    );
  });
});

describe("canonicalPath's shortcut for plain paths", () => {
  // Characters around the shortcut's edges: dots (dot segments, trailing dots), slashes
  // (empty segments), case, ";" and "%" (never plain), and the unreserved ones.
  const pathText = fc.array(fc.constantFrom("/", ".", "a", "Z", "0", "-", "_", "~", ";", "%2e", " "), { maxLength: 12 }).map((parts) => `/${parts.join("")}`);

  it("answers what the full resolution answers, for any path", () => {
    fc.assert(
      fc.property(pathText, (raw) => {
        expect(canonicalPath(raw)).toEqual(resolvePath(raw));
      }),
      { numRuns: RUNS.numRuns * 20 },
    );
  });

  it.each(["/", "/api/hello", "/API/Hello/", "/a.b/c~d/e-f_g", "/v1.2/x"])("takes %s as it is", (raw) => {
    expect(canonicalPath(raw)).toEqual(resolvePath(raw));
    expect((canonicalPath(raw) as { path: string }).path).toBe(raw);
  });
});
