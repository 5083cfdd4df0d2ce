#!/usr/bin/env node
// Runs the TypeScript CLI directly (tsx resolves the sources' .js import specifiers to .ts).
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/node/cli.ts");
process.exitCode = await main(process.argv.slice(2));
