import { Counter, type Registry } from "prom-client";
import { RULE_COUNTS, type RlsStats } from "../../rls/stats.js";

/**
 * The reference's per-rule stats under the names its Prometheus mapping gives them
 * (`ratelimit_service_rate_limit_total_hits{domain, key}` …), so dashboards built for
 * envoyproxy/ratelimit keep working. `key` is the rule's path in the config
 * (`message_type_marketing.to_number`): request values only for detailed_metric rules, bounded.
 * Read from RlsStats at scrape time: a decision pays no label hashing.
 */
export function registerRlsMetrics(registry: Registry, stats: RlsStats): void {
  for (const name of RULE_COUNTS) {
    new Counter({
      name: `ratelimit_service_rate_limit_${name}`,
      help: `envoyproxy/ratelimit's ${name} per domain and descriptor key (hits: each request's hits_addend).`,
      labelNames: ["domain", "key"],
      registers: [registry],
      collect() {
        this.reset();
        for (const { domain, key, counts } of stats.counts.values()) this.inc({ domain, key }, counts[name]);
      },
    });
  }
}
