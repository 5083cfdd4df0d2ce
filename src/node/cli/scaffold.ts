/**
 * The files `spillway init DIR` writes: a Worker project that deploys the user's own
 * spillway.config.json through `spillway/worker`. Kept as data so the CLI and its test
 * read the same thing.
 */
export interface ScaffoldVersions {
  /** The spillway version the project depends on (this package's own). */
  spillway: string;
  /** The wrangler version range the project uses. */
  wrangler: string;
  /**
   * The Node the project's npm scripts run on, as the `node` package (the one this repository
   * pins): wrangler needs Node 22 or later, and the machine's own node may be older.
   */
  node: string;
}

/** The oldest Node spillway and wrangler run on (the scaffold's `engines`). */
export const MIN_NODE = "22.12";

export function scaffoldFiles(name: string, versions: ScaffoldVersions): Record<string, string> {
  const packageJson = {
    name,
    version: "0.0.0",
    private: true,
    type: "module",
    // npm puts node_modules/.bin first on a script's PATH, so these run on the `node` below.
    scripts: {
      start: "wrangler dev",
      deploy: "wrangler deploy",
      check: "spillway check --config spillway.config.json",
    },
    engines: { node: `>=${MIN_NODE}` },
    dependencies: { spillway: `^${versions.spillway}` },
    devDependencies: { node: versions.node, wrangler: versions.wrangler },
  };
  const config = {
    $schema: "./node_modules/spillway/spillway.schema.json",
    policies: [
      { name: "per-minute", algorithm: "gcra", limit: 60, period: "1m" },
      { name: "per-hour", algorithm: "sliding-window", limit: 1000, period: "1h" },
      { name: "concurrent", algorithm: "concurrency", limit: 10, lease: "30s" },
    ],
  };
  return {
    "package.json": `${JSON.stringify(packageJson, null, 2)}\n`,
    "spillway.config.json": `${JSON.stringify(config, null, 2)}\n`,
    "wrangler.toml": WRANGLER_TOML.replace("{{name}}", name),
    "src/index.ts": INDEX_TS,
    ".dev.vars": "# Local secrets for `wrangler dev` (not committed). In production: `wrangler secret put SPILLWAY_TOKEN`.\nSPILLWAY_TOKEN=dev-token\n",
    ".gitignore": "node_modules/\n.wrangler/\n.dev.vars\n",
    "README.md": README_MD.replaceAll("{{name}}", name),
  };
}

const WRANGLER_TOML = `name = "{{name}}"
main = "src/index.ts"
compatibility_date = "2026-10-01"
# The client's leaving reaches the Worker (request.signal): a counted answer whose client left
# before its head is given up on, and charged, within waitUntil's 30 s (docs/counting.md).
compatibility_flags = ["enable_request_signal"]
# Smaller uploads and faster cold starts: minified, and without the name esbuild otherwise
# pins on every function and class (nothing in Spillway reads one). docs/worker.md gives the size.
minify = true
keep_names = false

# A bad spillway.config.json fails \`wrangler dev\`, \`wrangler deploy\` (and --dry-run) here,
# with a message that names the field.
[build]
command = "npx --no-install spillway check --config spillway.config.json"
watch_dir = ["src", "spillway.config.json"]

# One Durable Object per rate-limit key.
[[durable_objects.bindings]]
name = "LIMITER"
class_name = "LimiterObject"

# Runtime overrides (PUT /v1/overrides), read by every isolate once per overridesTtl.
[[durable_objects.bindings]]
name = "OVERRIDES"
class_name = "OverridesObject"

# SQLite-backed Durable Objects: state is persisted in each object's own database.
[[migrations]]
tag = "v1"
new_sqlite_classes = ["LimiterObject", "OverridesObject"]
`;

const INDEX_TS = `// Your Spillway Worker: the /v1 decision API, deciding in one Durable Object per key.
// spillway/worker/api bundles no gateway. To put Spillway in front of an origin (config
// \`origin\` and \`routes\`), import { createWorker } from "spillway/worker" and call it instead.
import { LimiterObject, OverridesObject, createApiWorker } from "spillway/worker/api";
import config from "../spillway.config.json";

const spillway = createApiWorker(config);

// wrangler.toml names these: the Durable Object classes, and the RPC entrypoint for service bindings.
export { LimiterObject, OverridesObject };
export const SpillwayRpc = spillway.Rpc;
export default { fetch: spillway.fetch };
`;

const README_MD = `# {{name}}

A rate limiter on Cloudflare Workers, made with \`spillway init\`. Your policies are in
\`spillway.config.json\`; \`wrangler dev\` and \`wrangler deploy\` check it first.

\`\`\`sh
npm install
npm start            # wrangler dev on http://localhost:8787, token from .dev.vars
\`\`\`

\`npm start\` runs on the Node this project pins (the \`node\` dev dependency), whatever
\`node\` is on your PATH. In another terminal, four checks of one key against \`per-minute\`
(GCRA, 60 a minute, one back each second), each costing 20: three 200s, then a 429 whose
\`retryAfterMs\` says when 20 are back.

\`\`\`sh
for i in 1 2 3 4; do
  curl -s -w ' %{http_code}\\n' -X POST http://localhost:8787/v1/check \\
    -H 'authorization: Bearer dev-token' -d '{"key":"alice","policy":"per-minute","cost":20}'
done
\`\`\`

Deploy: \`npx wrangler secret put SPILLWAY_TOKEN\`, then \`npm run deploy\`.
To put Spillway in front of an API, add \`origin\` and \`routes\` to the config (see
Spillway's README, "Gateway") and, in \`src/index.ts\`, import \`createWorker\` from
\`spillway/worker\` in place of \`createApiWorker\` (which leaves the gateway out of the bundle). Other Workers can call it over a service binding to the
\`SpillwayRpc\` entrypoint.
`;
