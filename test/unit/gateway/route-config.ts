// The config tests' one route: `load` parses a config of `policies` and `route` with the given
// fields added (what `spillway check` loads), `errorOf` the ValidationError it refuses them with.
import { expect } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { ValidationError } from "../../../src/core/validation.js";
import { type GatewayRoute, parseGatewayConfig } from "../../../src/gateway/config.js";

export function routeConfig(policies: readonly Record<string, unknown>[], route: Record<string, unknown>) {
  const load = (fields: Record<string, unknown>): GatewayRoute => parseGatewayConfig(parseConfig({ origin: "https://api.example.com", policies, routes: [{ ...route, ...fields }] }))!.routes[0]!;
  const errorOf = (fields: Record<string, unknown>): string => {
    try {
      load(fields);
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      return (error as Error).message;
    }
    throw new Error("the config was accepted");
  };
  return { load, errorOf };
}
