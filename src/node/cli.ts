import { readFile } from "node:fs/promises";
import { parseConfigText } from "../config.js";
import { ValidationError } from "../core/validation.js";
import { parseGatewayConfig } from "../gateway/config.js";
import { createNodeGateway } from "../gateway/node.js";
import { USAGE, parseServeArgs } from "./cli-args.js";
import { startServer } from "./server.js";
import { createStore } from "./stores.js";

/**
 * `spillway serve`: the Node runtime. Exit codes: 0 after a clean shutdown, 2 for bad
 * flags or config (the message names the field), 1 for anything else.
 */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--help" || command === "-h" || command === "help") {
    console.log(USAGE);
    return 0;
  }
  if (command !== "serve") {
    console.error(`spillway: unknown command ${JSON.stringify(command ?? "")}\n${USAGE}`);
    return 2;
  }
  try {
    const args = parseServeArgs(rest, process.env);
    const config = parseConfigText(await readConfig(args.configPath), args.configPath);
    // Validate the gateway part before connecting anywhere: a bad config fails at once.
    const gateway = parseGatewayConfig(config);
    const limiter = await createStore(args.store);
    const fallback = createNodeGateway({ config, gateway, limiter });
    const server = await startServer({ config, limiter, port: args.port, hostname: args.hostname, fallback });
    if (!process.env.SPILLWAY_TOKEN) console.warn("spillway: SPILLWAY_TOKEN is not set: /v1 answers 503 until it is");
    console.log(`spillway: listening on ${server.url} (store: ${limiter.kind}${gateway ? `, gateway to ${gateway.origin}` : ""})`);
    await untilSignal();
    console.log("spillway: shutting down (letting in-flight requests finish)");
    await server.close();
    return 0;
  } catch (error) {
    if (error instanceof ValidationError) {
      console.error(`spillway: ${error.message}`);
      return 2;
    }
    console.error(`spillway: ${(error as Error).message}`);
    return 1;
  }
}

async function readConfig(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    throw new ValidationError("--config", `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGTERM", () => resolve());
    process.once("SIGINT", () => resolve());
  });
}
