// bench:cost only: the policies and routes its scenarios decide with. Periods are seconds, so
// that every key goes idle (and its alarm cleans up) inside the run: storage left is measured.

/** The /v1/check policy of the service-binding scenario (cost-worker.ts builds its SpillwayRpc with it). */
export const API_POLICIES = [{ name: "api", algorithm: "fixed-window", limit: 100, period: "1s" }];

/** The gateway's config, without its origin (the scenarios' origin runs in Node: cost-origin.ts). */
export const GATEWAY_CONFIG = {
  policies: [
    { name: "per-address", algorithm: "gcra", limit: 20, period: "1s" },
    { name: "one", algorithm: "fixed-window", limit: 1000, period: "1s" },
    { name: "per-second", algorithm: "fixed-window", limit: 1000, period: "1s" },
    { name: "per-2s", algorithm: "sliding-window", limit: 2000, period: "2s" },
    { name: "bucket", algorithm: "token-bucket", limit: 1000, period: "1s" },
    { name: "hot", algorithm: "fixed-window", limit: 100000, period: "1s" },
    { name: "hot-local", algorithm: "fixed-window", limit: 100000, period: "1s", local: { share: 0.1 } },
    { name: "flood", algorithm: "fixed-window", limit: 5, period: "1s" },
    { name: "logins", algorithm: "fixed-window", limit: 1000, period: "1s" },
    { name: "tokens", algorithm: "fixed-window", limit: 1000000, period: "1s" },
    { name: "plan", algorithm: "gcra", limit: 10, period: "1s" },
    { name: "rpm", algorithm: "fixed-window", limit: 1000, period: "1s" },
    { name: "itpm", algorithm: "fixed-window", limit: 1000000, period: "1s" },
    { name: "otpm", algorithm: "fixed-window", limit: 1000000, period: "1s" },
  ],
  routes: [
    { match: { path: "/address/*" }, key: "ip", policies: ["per-address"] },
    { match: { path: "/one/*" }, key: "header:x-api-key", policies: ["one"] },
    { match: { path: "/stack/*" }, key: "header:x-api-key", policies: ["per-second", "per-2s", "bucket"] },
    { match: { path: "/hot/*" }, key: "const:hot", policies: ["hot"] },
    { match: { path: "/hot-local/*" }, key: "const:hot-local", policies: ["hot-local"] },
    { match: { path: "/flood/*" }, key: "header:x-api-key", policies: ["flood"] },
    { match: { path: "/login/*" }, key: "header:x-user", policies: ["logins"], count: { status: [401] } },
    { match: { path: "/llm/json/*" }, key: "header:x-api-key", policies: ["tokens"], cost: { responseJson: "usage.total_tokens" } },
    { match: { path: "/llm/header/*" }, key: "header:x-api-key", policies: ["tokens"], cost: { responseHeader: "x-usage-tokens" } },
    // Reserve, then settle: the reservation is the request's decision; the settle (30 − 100, a refund) is carried.
    { match: { path: "/llm/reserve/*" }, key: "header:x-api-key", policies: ["tokens"], cost: { responseJson: "usage.total_tokens", max: 4096 }, estimate: { requestHeader: "x-max-tokens" } },
    { match: { path: "/llm/reserve-header/*" }, key: "header:x-api-key", policies: ["tokens"], cost: { responseHeader: "x-usage-tokens", max: 4096 }, estimate: 100 },
    { match: { path: "/plan/*" }, key: "header:x-api-key", policies: ["plan"] },
    // Three measures of one answer (issue 42): requests, input and output tokens, each policy its own, one object request a decision.
    { match: { path: "/llm/measures/*" }, key: "header:x-api-key", policies: ["rpm", "itpm", "otpm"], cost: { usage: "openai", measures: { rpm: "requests", itpm: "input", otpm: "output" } } },
    { match: { path: "/llm/measures-estimate/*" }, key: "header:x-api-key", policies: ["rpm", "itpm", "otpm"], cost: { usage: "openai", measures: { rpm: "requests", itpm: "input", otpm: "output" } }, estimate: { input: 50, output: 50 } },
  ],
  overrides: [{ policy: "plan", source: "header:x-api-key", key: "acme-*", limit: 1000 }],
  overridesTtl: "10s",
};
