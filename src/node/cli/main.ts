// node/cli: the `spillway` command (serve, check, rls, init), its help and exit codes; the
// scaffold `init` writes and the JSON schema writer live beside it.
import { readFileSync } from "node:fs";
import { CHECK_USAGE, INIT_USAGE, RLS_COMMAND_USAGE, SERVE_USAGE } from "../args/serve.js";
import { serve } from "./serve.js";
import { rls } from "./rls.js";
import { check, init } from "./check.js";

export { counted } from "./run.js";

/** One `spillway` command: its usage (`spillway COMMAND --help`), its one-line summary, its body. */
export interface CliCommand {
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

/**
 * Every command, in the order `spillway --help` lists them. A command added here gets its
 * `--help` and its line in the overview from its own usage text.
 */
export const COMMANDS: Record<string, CliCommand> = {
  serve: { summary: "the HTTP API, the gateway and Envoy's rate limit service on Node", usage: SERVE_USAGE, run: serve },
  check: { summary: "validate a config, start nothing", usage: CHECK_USAGE, run: check },
  init: { summary: "scaffold a Cloudflare Worker project", usage: INIT_USAGE, run: init },
  rls: { summary: "envoyproxy/ratelimit's service, configured by its environment variables", usage: RLS_COMMAND_USAGE, run: rls },
};

const HELP_FLAGS = new Set(["--help", "-h"]);

/** `spillway --help`: each command's summary, then how to get its own usage. */
export function overview(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, command]) => `  spillway ${name.padEnd(width)}  ${command.summary}`);
  return `spillway ${version()}: rate limiting for Node and Cloudflare Workers\n\nusage: spillway COMMAND [flags]\n\n${lines.join("\n")}\n\n  spillway COMMAND --help   that command's flags\n  spillway --version        the installed version\n\ndocs: node_modules/spillway/docs/ (serve.md, config.md, envoy.md, …)`;
}

/** The package's version, from its own package.json (dist/node/cli/ and src/node/cli/ are both three levels down). */
export function version(): string {
  return (JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

/**
 * The `spillway` command: `serve` (the Node runtime), `init DIR` (a Worker project) and
 * `check --config FILE`; `--help` and `--version`. Exit codes: 0 after a clean shutdown, a
 * valid config or help, 2 for bad flags or config (the message names the field), 1 for
 * anything else.
 */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    console.error(overview());
    return 2;
  }
  if (HELP_FLAGS.has(name) || (name === "help" && rest.length === 0)) {
    console.log(overview());
    return 0;
  }
  if (name === "--version" || name === "-v" || name === "version") {
    console.log(version());
    return 0;
  }
  if (name === "help") {
    const asked = COMMANDS[rest[0]!];
    if (asked) console.log(asked.usage);
    else console.error(`spillway: no command ${JSON.stringify(rest[0])}\n\n${overview()}`);
    return asked ? 0 : 2;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    console.error(`spillway: unknown command ${JSON.stringify(name)}\n\n${overview()}`);
    return 2;
  }
  // `spillway serve --config x --help` is a question, not a start.
  if (rest.some((arg) => HELP_FLAGS.has(arg))) {
    console.log(command.usage);
    return 0;
  }
  return command.run(rest);
}
