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
    throw new ValidationError(name, `is not valid YAML (${(error as Error).message.split("\n")[0]})`);
  }
}

/** Whether a directory entry is a config file: `.yaml`, `.yml` or `.json`, not hidden. */
export function isRlsConfigFile(name: string): boolean {
  return !name.startsWith(".") && /\.(ya?ml|json)$/i.test(name);
}
