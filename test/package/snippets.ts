/**
 * The fenced code blocks of README.md and docs/*.md, and how the snippet test treats each.
 *
 * Classification, by the block's fence language and the marker line before it (the nearest
 * non-blank line above the opening fence):
 * - `<!-- snippet: skip (reason) -->`: not tested; listed with its reason (a reason is required).
 * - ts / typescript / tsx: a complete module, type-checked as a strict consumer of the packed
 *   package (`consumer`), or of `spillway/worker` with the Workers types (`worker`: the block
 *   imports `spillway/worker` or `cloudflare:workers`). With `<!-- snippet: run -->` it is also
 *   run on the oldest Node the package claims (through tsx, as the README says to).
 * - js / mjs / javascript: `node --check`, and run like a ts block when marked `run`.
 * - json: parsed (a JSON value, or JSON Lines). An object whose top-level fields are all fields of
 *   the config schema is a config: `spillway check` must accept it (so a config's fragment fails:
 *   write whole configs). Anything else is data (a decision, log lines): parsed only.
 * - sh / bash / shell / console: `bash -n` (syntax). `npm install` lines in them name the packages
 *   the consumer gets: nothing else is installed.
 * - yaml / yml: parsed. toml, text, http, no language: listed, not checked.
 * In a `run` block, comment lines `// → TEXT` are what it prints, line by line, in order
 * (`t=N`, seconds to a reset, may tick over under load, so it is not compared).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export type SnippetKind = "ts" | "js" | "json" | "sh" | "yaml" | "text" | "skip";

export interface Snippet {
  /** `README.md:42`: the file and the line of the opening fence. */
  where: string;
  file: string;
  line: number;
  lang: string;
  kind: SnippetKind;
  code: string;
  /** The reason given by a `skip` marker, or why a kind is not checked. */
  reason?: string;
  /** Marked `<!-- snippet: run -->`. */
  run: boolean;
}

const SKIP = /^<!--\s*snippet:\s*skip\s*\((.+)\)\s*-->$/;
const RUN = /^<!--\s*snippet:\s*run\s*-->$/;
const MARKER = /^<!--\s*snippet:/;

const KINDS: Record<string, SnippetKind> = {
  ts: "ts",
  typescript: "ts",
  tsx: "ts",
  js: "js",
  mjs: "js",
  javascript: "js",
  json: "json",
  sh: "sh",
  bash: "sh",
  shell: "sh",
  console: "sh",
  yaml: "yaml",
  yml: "yaml",
};

/** Proxy configs the snippet test cannot check alone: a test starts the real proxy from the block. */
const RUN_ELSEWHERE: Record<string, string> = {
  nginx: "test/unit/node/http/forward-auth-proxies.test.ts (real nginx)",
  caddyfile: "test/unit/node/http/forward-auth-proxies.test.ts (real Caddy)",
};

/** The documents the snippet test reads: README.md, then docs/*.md in name order. */
export function documentPaths(root: string): string[] {
  const docs = readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  return ["README.md", ...docs];
}

/** Every fenced block of one Markdown document, classified. Throws on a malformed marker. */
export function extractSnippets(file: string, text: string): Snippet[] {
  const lines = text.split("\n");
  const snippets: Snippet[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)/.exec(lines[index]!);
    if (!open) continue;
    const fence = open[2]!;
    const body: string[] = [];
    let end = index + 1;
    while (end < lines.length && !lines[end]!.trim().startsWith(fence)) body.push(lines[end++]!.slice(open[1]!.length));
    if (end >= lines.length) throw new Error(`${file}:${index + 1}: a code fence is never closed`);
    snippets.push(classify(file, index + 1, open[3]!.toLowerCase(), body.join("\n"), markerBefore(lines, index)));
    index = end;
  }
  return snippets;
}

function markerBefore(lines: string[], fenceIndex: number): string | undefined {
  for (let index = fenceIndex - 1; index >= 0; index--) {
    const line = lines[index]!.trim();
    if (line === "") continue;
    return MARKER.test(line) ? line : undefined;
  }
  return undefined;
}

function classify(file: string, line: number, lang: string, code: string, marker: string | undefined): Snippet {
  const base = { where: `${file}:${line}`, file, line, lang, code, run: false };
  if (marker !== undefined) {
    const skip = SKIP.exec(marker);
    if (skip) return { ...base, kind: "skip", reason: skip[1]!.trim() };
    if (!RUN.test(marker)) throw new Error(`${base.where}: unknown marker ${marker} (use <!-- snippet: skip (reason) --> or <!-- snippet: run -->)`);
  }
  const kind = KINDS[lang] ?? "text";
  const run = marker !== undefined;
  if (run && kind !== "ts" && kind !== "js") throw new Error(`${base.where}: only ts and js blocks can be marked run`);
  if (kind === "text" && RUN_ELSEWHERE[lang]) return { ...base, kind, reason: `${lang}: run as written by ${RUN_ELSEWHERE[lang]}` };
  if (kind === "text") return { ...base, kind, reason: lang ? `${lang}: no checker for this language` : "no language: text" };
  return { ...base, kind, run };
}

/** Every snippet of every document under `root`. */
export function allSnippets(root: string): Snippet[] {
  return documentPaths(root).flatMap((path) => extractSnippets(path, readFileSync(join(root, path), "utf8")));
}

/** A file name for a snippet: `README.md:42` → `README-42`. */
export function snippetName(snippet: Snippet): string {
  return `${snippet.file.replace(/^docs\//, "docs-").replace(/\.md$/, "")}-${snippet.line}`;
}

/**
 * The packages the documents tell a user to install: every name on an `npm install` (or `npm i`)
 * line of a shell block, flags dropped. `spillway` is the packed tarball's place.
 */
export function installedPackages(snippets: Snippet[]): string[] {
  const names = new Set<string>();
  for (const snippet of snippets) {
    if (snippet.kind !== "sh") continue;
    for (const match of snippet.code.matchAll(/^\s*(?:\$\s*)?npm\s+(?:install|i|add)\b([^\n#&|;]*)/gm)) {
      for (const word of match[1]!.trim().split(/\s+/)) if (word && !word.startsWith("-")) names.add(word);
    }
  }
  return [...names].sort();
}

/**
 * The project set-up the documents tell a user to do after `npm init -y`: every `npm pkg set …`
 * line of a shell block, as npm's arguments (`["pkg", "set", "type=module"]`). The snippet test
 * makes its project with `npm init -y` (npm 11 writes `"type": "commonjs"`) and runs these, so
 * a document that forgets to say `npm pkg set type=module` fails its ES module blocks.
 */
export function projectSteps(snippets: Snippet[]): string[][] {
  const steps = new Map<string, string[]>();
  for (const snippet of snippets) {
    if (snippet.kind !== "sh") continue;
    for (const match of snippet.code.matchAll(/^\s*(?:\$\s*)?npm\s+(pkg\s+set\b[^\n#&|;]*)/gm)) {
      const args = match[1]!.trim().split(/\s+/);
      steps.set(args.join(" "), args);
    }
  }
  return [...steps.values()];
}

/** The first shell block of a document that installs something: where a reader sets a project up. */
export function firstInstallBlock(snippets: Snippet[], file: string): Snippet | undefined {
  return snippets.find((snippet) => snippet.file === file && snippet.kind === "sh" && /^\s*(?:\$\s*)?npm\s+(?:install|i|add)\b/m.test(snippet.code));
}

/** Does the block target the Workers runtime (and so need its types)? */
export function isWorkerModule(code: string): boolean {
  return /from\s+["'](spillway\/worker|cloudflare:workers)["']/.test(code);
}

/** Syntax the oldest Node the package claims (22.12) lacks: explicit resource management (V8 of Node 24). */
export function tooNewSyntax(code: string): string | undefined {
  if (/\b(await\s+)?using\s+[A-Za-z_$][\w$]*\s*=/.test(code)) return "`using` / `await using` declarations (Node 24+; the package claims Node 22.12)";
  return undefined;
}

/** The `// → TEXT` lines of a run block: what it prints, in order. */
export function promisedOutput(code: string): string[] {
  return [...code.matchAll(/^\s*\/\/ → (.*)$/gm)].map((match) => match[1]!.trim());
}

/** A printed line as compared with a promise: seconds to a reset (`t=N`) may tick over under load. */
export function comparable(line: string): string {
  return line.trim().replace(/\bt=\d+/g, "t=N");
}
