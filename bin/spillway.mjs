#!/usr/bin/env node
// Runs the TypeScript CLI directly. Where Node strips types itself (Node 22.18+/23.6+, on by
// default), it loads the sources natively, with scripts/ts-hooks.mjs mapping their `.js`
// import specifiers to `.ts`: unlike tsx (esbuild's keepNames), that adds no defineProperty
// per named closure per call on hot paths. Node refuses to strip types under node_modules,
// so an installed copy (or a Node without type stripping) still goes through tsx.
if (process.features.typescript && !new URL(import.meta.url).pathname.split("/").includes("node_modules")) {
  await import("../scripts/ts-hooks.mjs");
} else {
  const { register } = await import("tsx/esm/api");
  register();
}
const { main } = await import("../src/node/cli.ts");
process.exitCode = await main(process.argv.slice(2));
