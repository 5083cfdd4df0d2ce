// Types for tests inside workerd: `env` bindings and `exports` of the Worker under test.
declare namespace Cloudflare {
  interface Env {
    LIMITER: DurableObjectNamespace<import("../../src/worker/limiter-object.js").LimiterObject>;
    SPILLWAY_TOKEN?: string;
  }
  interface GlobalProps {
    mainModule: typeof import("../../demo/worker.js");
    durableNamespaces: "LimiterObject";
  }
}
