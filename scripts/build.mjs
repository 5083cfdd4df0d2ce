// `npm run build` (and `prepack`, so `npm pack` and `npm publish` ship a fresh build): src/ → dist/ with tsc (tsconfig.build.json), then the
// files modules read at run time next to the modules that read them (the Redis store's Lua,
// src/stores/redis/scripts.ts). dist/ is emptied first so no module deleted from src/ lingers.
import { execFileSync } from "node:child_process";
import { cpSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

rmSync(`${root}dist`, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, "-p", `${root}tsconfig.build.json`], { stdio: "inherit" });
cpSync(`${root}src/stores/redis/lua`, `${root}dist/stores/redis/lua`, { recursive: true });

// spillway.schema.json, from the schemas the config parser uses (src/node/json-schema.ts).
// It is committed too, so a checkout's own config can name it; a test holds the two equal.
const { configJsonSchema } = await import(`${root}dist/node/json-schema.js`);
writeFileSync(`${root}spillway.schema.json`, `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
