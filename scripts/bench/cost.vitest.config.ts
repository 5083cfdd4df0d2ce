import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// bench:cost's scenarios run as a vitest file inside workerd (the plugin, offline, as the
// worker tests do); scripts/bench/cost.ts starts this run and reads each scenario's counts.
export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./scripts/bench/wrangler.cost.toml" } })],
  test: {
    name: "cost",
    include: ["scripts/bench/cost-scenarios.bench-run.ts"],
    globalSetup: ["scripts/bench/cost-origin.ts"],
    testTimeout: 120_000,
  },
});
