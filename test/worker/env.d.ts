// Types for tests inside workerd: `env` bindings and `exports` of the Worker under test.
declare namespace Cloudflare {
  interface Env {
    LIMITER: DurableObjectNamespace<import("../../src/worker/limiter-object.js").LimiterObject>;
    CLOCKED_LIMITER: DurableObjectNamespace<import("./clocked-limiter-object.js").ClockedLimiterObject>;
    METERED_LIMITER: DurableObjectNamespace<import("../../scripts/bench/storage-probe.js").MeteredLimiterObject>;
    SPILLWAY_TOKEN?: string;
    SPILLWAY_ANALYTICS?: AnalyticsEngineDataset;
  }
  interface GlobalProps {
    mainModule: typeof import("./main.js");
    durableNamespaces: "LimiterObject" | "ClockedLimiterObject" | "MeteredLimiterObject";
  }
}
