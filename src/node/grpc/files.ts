import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { ValidationError } from "../../core/validation.js";
import { parseRlsConfig } from "../../rls/config.js";
import { isRlsConfigFile, parseRlsText } from "../../rls/files.js";
import type { RlsConfig } from "../../rls/types.js";

/**
 * Reads `--rls-config PATH`: one YAML or JSON file, or every `.yaml`, `.yml` and `.json` file
 * of a directory (the reference's runtime directory; hidden files skipped, subdirectories not
 * read), in name order. Any bad file fails the whole load with a ValidationError naming it.
 */
export async function loadRlsConfig(path: string): Promise<RlsConfig> {
  let names: string[];
  try {
    names = (await stat(path)).isDirectory() ? (await readdir(path)).filter(isRlsConfigFile).sort().map((name) => join(path, name)) : [path];
  } catch (error) {
    throw new ValidationError("--rls-config", `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (names.length === 0) throw new ValidationError("--rls-config", `${path} holds no .yaml, .yml or .json file`);
  const files = await Promise.all(
    names.map(async (name) => {
      try {
        return parseRlsText(name, await readFile(name, "utf8"));
      } catch (error) {
        if (error instanceof ValidationError) throw error;
        throw new ValidationError(name, `cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      }
    }),
  );
  return parseRlsConfig(files);
}
