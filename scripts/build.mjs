// `npm run build` (and `prepack`, so `npm pack` and `npm publish` ship a fresh build): src/ → dist/ with tsc (tsconfig.build.json), then the
// files modules read at run time next to the modules that read them (the Redis store's Lua,
// src/stores/redis/scripts.ts), then zod bundled into dist/vendor/ (scripts/vendor-zod.mjs), so
// an install needs no zod. dist/ is emptied first so no module deleted from src/ lingers.
import { execFileSync } from "node:child_process";
import { cpSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { vendorZod } from "./vendor-zod.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

rmSync(`${root}dist`, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, "-p", `${root}tsconfig.build.json`], { stdio: "inherit" });
cpSync(`${root}src/stores/redis/lua`, `${root}dist/stores/redis/lua`, { recursive: true });

// spillway.schema.json, from the schemas the config parser uses (src/node/cli/json-schema.ts).
// It is committed too, so a checkout's own config can name it; a test holds the two equal.
const { configJsonSchema } = await import(`${root}dist/node/cli/json-schema.js`);
writeFileSync(`${root}spillway.schema.json`, `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
// That module runs here only (no module of the package imports it): not shipped, so the
// vendored zod need not carry zod's JSON Schema writer.
for (const ext of [".js", ".js.map", ".d.ts"]) rmSync(`${root}dist/node/cli/json-schema${ext}`);

await vendorZod(root, `${root}dist`);
