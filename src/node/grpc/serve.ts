import { readFile } from "node:fs/promises";
import type { Registry } from "prom-client";
import { ValidationError } from "../../core/validation.js";
import type { Limiter } from "../../core/limiter.js";
import { RlsStats } from "../../rls/stats.js";
import type { RlsConfig } from "../../rls/types.js";
import type { RlsArgs } from "../args/rls.js";
import { loadRlsConfig } from "./files.js";
import { type RunningRlsServer, startRlsServer } from "./server.js";

/** What `spillway serve --rls-port` runs: the gRPC server, reloading its config on SIGHUP (the CLI's one handler, reload.ts). */
export interface ServedRls {
  server: RunningRlsServer;
  /** Re-reads --rls-config: a bad file keeps the config in force and logs one line naming the field. */
  reload(): Promise<boolean>;
  close(): Promise<void>;
}

/** Reads the config and the TLS files first: a bad one is a ValidationError (exit 2) before anything starts. */
export async function prepareRls(args: RlsArgs): Promise<{ config: RlsConfig; tls?: { cert: Buffer; key: Buffer } }> {
  const config = await loadRlsConfig(args.configPath);
  if (!args.tls) return { config };
  const read = async (path: string, flag: string) => {
    try {
      return await readFile(path);
    } catch (error) {
      throw new ValidationError(flag, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  };
  return { config, tls: { cert: await read(args.tls.certPath, "--rls-tls-cert"), key: await read(args.tls.keyPath, "--rls-tls-key") } };
}

export async function serveRls(
  args: RlsArgs,
  prepared: { config: RlsConfig; tls?: { cert: Buffer; key: Buffer } },
  options: { limiter: Limiter; hostname: string; registry?: Registry; log?: (line: string) => void; healthy?: () => boolean },
): Promise<ServedRls> {
  const log = options.log ?? ((line: string) => console.log(line));
  const stats = new RlsStats();
  // Loaded here, not imported: prom-client is optional, and a registry means it is installed.
  if (options.registry) (await import("./metrics.js")).registerRlsMetrics(options.registry, stats);
  const server = await startRlsServer({ limiter: options.limiter, config: prepared.config, port: args.port, hostname: options.hostname, tls: prepared.tls, stats, responseHeaders: args.responseHeaders, healthy: options.healthy });
  const reload = async () => {
    try {
      const config = await loadRlsConfig(args.configPath);
      server.setConfig(config);
      log(`spillway: rls: reloaded ${args.configPath} (${config.domains.size} domain(s))`);
      return true;
    } catch (error) {
      log(`spillway: rls: reload refused, the config in force stays: ${(error as Error).message}`);
      return false;
    }
  };
  return { server, reload, close: () => server.close() };
}
