/**
 * The server's optional packages. The library (spillway/hono, /node, /redis, /client, /core,
 * /worker) installs with three small dependencies; what only `spillway serve` needs is an
 * optional peer dependency, loaded with import() when a flag or route needs it:
 *
 * - ioredis: `--redis`, `--redis-cluster` and `spillway/redis` (src/stores/redis/ioredis.ts)
 * - prom-client and uplot: `/metrics`, `/v1/top`, `/v1/stats`, `/dashboard` (on by default)
 * - @grpc/grpc-js and @grpc/proto-loader: `--rls-port` (Envoy's rate limit service)
 * - @opentelemetry/api, core, resources, sdk-trace-base and the OTLP/HTTP exporters: traces,
 *   when OTEL_TRACES_EXPORTER=otlp (or `spillway rls`'s TRACING_ENABLED=true) asks (cli/tracing.ts)
 *
 * A missing one is one line naming what to install, never Node's stack.
 */

/** Every optional package, for the one command that installs them all (docs/serve.md). */
export const SERVER_PACKAGES = [
  "ioredis",
  "prom-client",
  "uplot",
  "@grpc/grpc-js",
  "@grpc/proto-loader",
  "@opentelemetry/api",
  "@opentelemetry/core",
  "@opentelemetry/resources",
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/exporter-trace-otlp-proto",
  "@opentelemetry/exporter-trace-otlp-http",
] as const;

/** A feature's package is not installed: the message says which and how to install it. */
export class MissingPackageError extends Error {
  readonly packages: readonly string[];

  constructor(packages: readonly string[], forWhat: string) {
    const named = packages.length > 1 ? `${packages.slice(0, -1).join(", ")} and ${packages.at(-1)}` : packages[0];
    super(`${forWhat} needs ${named}, which ${packages.length === 1 ? "is" : "are"} not installed: npm install ${packages.join(" ")}`);
    this.name = "MissingPackageError";
    this.packages = packages;
  }
}

/** Whether `error` is Node's "not found" for one of `packages` (import() or require()). */
export function isMissingPackage(error: unknown, packages: readonly string[]): boolean {
  const { code, message } = error as { code?: string; message?: string };
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false;
  return packages.some((name) => message?.includes(`'${name}'`) || message?.includes(`"${name}"`));
}

/**
 * Loads a module that imports optional `packages`: a missing one becomes a MissingPackageError
 * naming all of them (`--rls-port needs @grpc/grpc-js and @grpc/proto-loader …`).
 */
export async function importNeeding<T>(load: () => Promise<T>, packages: readonly string[], forWhat: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissingPackage(error, packages)) throw new MissingPackageError(packages, forWhat);
    throw error;
  }
}
