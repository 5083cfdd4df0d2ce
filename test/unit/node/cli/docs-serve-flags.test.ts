import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SERVE_USAGE, parseServeArgs } from "../../../../src/node/args/serve.js";
import { documentPaths, extractSnippets } from "../../../package/snippets.js";

// Every `spillway serve …` command in a shell block of README.md and docs/*.md is one that
// `spillway serve` accepts: its flags are parsed as the CLI parses them (the snippet test only
// checks such blocks' bash syntax). Placeholders (`…`) and environment prefixes are allowed.

const root = join(import.meta.dirname, "../../../..");

function serveCommands(): { where: string; args: string[] }[] {
  const commands: { where: string; args: string[] }[] = [];
  for (const path of documentPaths(root)) {
    for (const snippet of extractSnippets(path, readFileSync(join(root, path), "utf8"))) {
      if (snippet.lang !== "sh" && snippet.lang !== "bash" && snippet.lang !== "shell") continue;
      const lines = snippet.code.replace(/\\\n\s*/g, " ").split("\n");
      lines.forEach((line, index) => {
        const words = line.replace(/#.*$/, "").trim().split(/\s+/);
        const at = words.findIndex((word, i) => word === "serve" && /spillway(\.mjs)?$/.test(words[i - 1] ?? ""));
        if (at < 0) return;
        // Up to the end of the command (a pipe, &&, ;, &).
        const rest = words.slice(at + 1);
        const end = rest.findIndex((word) => ["|", "&&", ";", "&", "||"].includes(word));
        commands.push({ where: `${snippet.where}+${index}`, args: end < 0 ? rest : rest.slice(0, end) });
      });
    }
  }
  return commands;
}

describe("the docs' spillway serve commands", () => {
  const commands = serveCommands();
  it("finds the Sentinel and --workers examples", () => {
    expect(commands.some(({ args }) => args.includes("--redis-sentinel"))).toBe(true);
    expect(commands.some(({ args }) => args.includes("--workers"))).toBe(true);
  });

  it.each(commands.map(({ where, args }) => [where, args] as const))("%s parses", (_where, args) => {
    expect(() => parseServeArgs(args, {})).not.toThrow();
  });
});

// docs/serve.md's flag table has one row for each flag of `spillway serve --help`, and no other.
describe("docs/serve.md's flag table", () => {
  it("lists every flag of the usage text, and only those", () => {
    const usageFlags = new Set([...SERVE_USAGE.matchAll(/^ {2}(--[a-z-]+)/gm)].map((match) => match[1]!));
    const docs = readFileSync(join(root, "docs", "serve.md"), "utf8");
    const rows = [...docs.matchAll(/^\| `(--[a-z-]+)[^`]*` \|/gm)].map((match) => match[1]!);
    expect(usageFlags.size).toBeGreaterThan(20);
    expect(new Set(rows).size, "a flag listed twice").toBe(rows.length);
    expect([...rows].sort()).toEqual([...usageFlags].sort());
  });
});
