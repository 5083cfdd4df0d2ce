// The gateway of SPEC §5, runtime-neutral (Workers and Node). Node's origin client and
// client-address function live in ./node.ts, the Worker's wiring in ./worker.ts.
export { CONFIG_FIELDS, type GatewayConfig, type GatewayRoute, parseGatewayConfig } from "./config.js";
export { type GatewayOptions, createGateway } from "./gateway.js";
export { type IpAddress, formatIp, parseIp, resolveClientIp } from "./ip.js";
export { type KeySource, parseKeySource } from "./keys.js";
export { DRY_RUN_HEADER, type LimitPlan, type LogFn, limitRequest, quotaExceededResponse } from "./limit.js";
export { type FetchOrigin, HOP_BY_HOP_HEADERS, withoutHopByHop } from "./proxy.js";
