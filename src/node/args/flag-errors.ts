import { ValidationError, nearestName } from "../../core/validation.js";

/**
 * node:util parseArgs's errors in Spillway's words: `Unknown option '--prot'` becomes
 * `--prot: is not a flag of spillway serve (did you mean --port?); spillway serve --help lists them`.
 * Every flag mistake ends with the pointer to the command's `--help`.
 */
export function flagError(error: unknown, command: string, flags: Iterable<string>): ValidationError {
  const { code, message } = error as { code?: string; message: string };
  const help = `spillway ${command} --help lists them`;
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const given = /'(-{1,2}[^']*)'/.exec(message)?.[1] ?? message;
    const name = given.replace(/^-+/, "").split("=")[0]!;
    const near = nearestName(name, flags);
    return new ValidationError(given, `is not a flag of spillway ${command}${near ? ` (did you mean --${near}?)` : ""}; ${help}`);
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    // `Option '--port <value>' argument missing`, or a boolean flag given a value.
    const flag = /'(--[\w-]+)/.exec(message)?.[1] ?? "arguments";
    const missing = /argument missing/.test(message);
    return new ValidationError(flag, `${missing ? "needs a value" : "takes no value"}; spillway ${command} --help says what it takes`);
  }
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
    const given = /'([^']*)'/.exec(message)?.[1];
    return new ValidationError("arguments", `spillway ${command} takes flags only${given !== undefined ? `, got ${JSON.stringify(given)}` : ""}; ${help}`);
  }
  return new ValidationError("arguments", `${message}; ${help}`);
}

/** The flags a usage text lists (`--port N` → `port`), the candidates for "did you mean". */
export function flagsIn(usage: string): string[] {
  return [...new Set([...usage.matchAll(/(?<![\w-])--([a-z][\w-]*)/g)].map((match) => match[1]!))];
}
