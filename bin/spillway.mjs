#!/usr/bin/env node
// The `spillway` command. An installed copy runs the built JavaScript (dist/, which is all the
// package ships): no TypeScript, no devDependencies. A checkout runs its TypeScript sources on
// Node's own type stripping (Node 22.18+/23.6+, on by default), with bin/ts-hooks.mjs
// mapping their `.js` import specifiers to `.ts`, so an edit is live without a rebuild and no
// stale dist/ is ever what a test or `npm run serve` measured. A checkout on a Node without type
// stripping runs dist/ too (built by `npm run build`).
import { existsSync } from "node:fs";

// The one line an older Node gets, before any module that needs a newer one is loaded. `init`
// only writes files, and the project it writes pins its own Node: it runs on an older one too.
const [major, minor] = process.versions.node.split(".").map(Number);
if ((major < 22 || (major === 22 && minor < 12)) && process.argv[2] !== "init") {
  console.error(
    `spillway: needs Node 22.12 or later; this is Node ${process.versions.node} (${process.execPath}). ` +
      `Install a newer one (nvm install 24, fnm install 24, volta install node@24), or run it once on one from npm: npx -p node@24 -p spillway spillway ${process.argv.slice(2).join(" ")}`.trimEnd(),
  );
  process.exit(1);
}

// `pidof spillway` and `pkill -x spillway` find the server (docs/serve.md, signals), not `node`.
process.title = "spillway";

const fromSources =
  process.features.typescript &&
  !new URL(import.meta.url).pathname.split("/").includes("node_modules") &&
  existsSync(new URL("../src/node/cli/main.ts", import.meta.url)) &&
  existsSync(new URL("./ts-hooks.mjs", import.meta.url));

let cli;
if (fromSources) {
  await import("./ts-hooks.mjs");
  cli = await import("../src/node/cli/main.ts");
} else if (existsSync(new URL("../dist/node/cli/main.js", import.meta.url))) {
  cli = await import("../dist/node/cli/main.js");
} else {
  console.error("spillway: dist/ is missing: run `npm run build` first");
  process.exit(1);
}
const code = await cli.main(process.argv.slice(2));
// Done (a failure, or serve after its graceful shutdown): exit now, whatever is still pending
// (a Redis client's reconnection, a DNS lookup in flight). stdout and stderr are synchronous here.
process.exit(code);
