import { parse as parseYaml } from "yaml";
import { findDuplicateKey } from "../core/json-duplicates.js";
import { ValidationError } from "../core/validation.js";
import type { RlsFile } from "./config.js";

/**
 * One config file's text, read as JSON when its name ends in `.json` and as YAML otherwise
 * (the reference's format; YAML is a superset of JSON). A syntax error names the file and
 * where in it. Repeated keys in one mapping are an error, not a silent last-one-wins.
 */
export function parseRlsText(name: string, text: string): RlsFile {
  if (name.endsWith(".json")) {
    const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text; // a byte order mark is no part of the JSON
    let content: unknown;
    try {
      content = JSON.parse(json);
    } catch (error) {
      throw new ValidationError(name, `is not valid JSON (${(error as Error).message})`);
    }
    const duplicate = findDuplicateKey(json);
    if (duplicate) throw new ValidationError(name, `${duplicate.join(".")}: appears twice: set each field once (JSON keeps the last one silently)`);
    return { name, content };
  }
  try {
    return { name, content: parseYaml(text, { uniqueKeys: true, prettyErrors: true }) };
  } catch (error) {
    throw new ValidationError(name, yamlErrorText(error as Error & { linePos?: { line: number; col: number }[] }, text));
  }
}

/**
 * A YAML syntax error in one line: where it is, then what. The parser notices some mistakes
 * only at the start of the next line (column 1: a mis-indented key) or at the end of the file
 * (a flow map never closed): the position is moved to the text that is wrong, the first
 * character of a mis-indented line, or the `{` / `[` still open.
 */
export function yamlErrorText(error: Error & { linePos?: { line: number; col: number }[] }, text: string): string {
  const what = error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
  const at = error.linePos?.[0];
  if (!at) return `is not valid YAML: ${what}`;
  const lines = text.split(/\r?\n/);
  let line = at.line;
  let col = at.col;
  if (col === 1) {
    // Past the end, or on a blank line: the mistake is in the last line with text before it.
    while (line > 1 && (lines[line - 1] ?? "").trim() === "") line--;
    const source = lines[line - 1] ?? "";
    const open = /^Flow (map|sequence)/.test(what) ? Math.max(source.lastIndexOf("{"), source.lastIndexOf("[")) : -1;
    col = open >= 0 ? open + 1 : source.length - source.trimStart().length + 1;
  }
  return `is not valid YAML at line ${line}, column ${col}: ${what}`;
}

/** Whether a directory entry is a config file: `.yaml`, `.yml` or `.json`, not hidden. */
export function isRlsConfigFile(name: string): boolean {
  return !name.startsWith(".") && /\.(ya?ml|json)$/i.test(name);
}
