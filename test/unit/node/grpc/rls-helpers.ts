import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { loadRlsProtos } from "../../../../src/node/grpc/server.js";

/**
 * envoyproxy/ratelimit's README examples, as its README writes them (Examples 1, 2, 3, 5, 6,
 * 7, 9), plus a per-IP domain with an unlimited address and a domain using Spillway's extensions.
 */
export const README_CONFIGS: Record<string, string> = {
  "mongo_cps.yaml": `domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500

  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
`,
  "messaging.yaml": `domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5

  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`,
  "edge_proxy_per_ip.yaml": `domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10

  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0

  # An address nobody limits (the reference's Example 5, per IP)
  - key: remote_address
    value: 10.0.0.1
    rate_limit:
      unlimited: true
`,
  "example6.yaml": `domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit:
          requests_per_unit: 10
          unit: second
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit:
          requests_per_unit: 20
          unit: second
`,
  "example7.yaml": `domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
`,
  "example9.yaml": `domain: example9
descriptors:
  - key: key1
    value: value*
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: path
    value: /api/*/action
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: files
    value: files/*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 10
`,
  "spillway.json": JSON.stringify({
    domain: "spillway_extensions",
    descriptors: [
      { key: "api_key", policies: [{ name: "per-10s", algorithm: "fixed-window", limit: 2, period: "10s" }, { name: "per-hour", algorithm: "sliding-window", limit: 3, period: "1h" }] },
      { key: "tenant", rate_limit: { unit: "minute", requests_per_unit: 3, algorithm: "gcra", burst: 3 } },
    ],
  }),
  "independent.yaml": `domain: independent
atomic: false
descriptors:
  - key: a
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: b
    rate_limit: { unit: hour, requests_per_unit: 5 }
`,
};

/** Writes config files into a fresh directory and answers its path. */
export async function configDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "spillway-rls-"));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

export interface Status {
  code: string;
  current_limit?: { name?: string; requests_per_unit?: number; unit?: string };
  limit_remaining?: number;
  duration_until_reset?: { seconds?: string };
}

export interface Answer {
  overall_code: string;
  statuses: Status[];
  response_headers_to_add?: { key: string; value: string }[];
  dynamic_metadata?: unknown;
}

type Descriptor = { entries: { key: string; value: string }[]; hits_addend?: { value: number }; limit?: { requests_per_unit: number; unit: string } };

/** A gRPC client on the shipped protos, as Envoy would call: one channel, unary calls. */
export function rlsClient(address: string, credentials = grpc.credentials.createInsecure(), options: grpc.ClientOptions = {}) {
  const { RateLimitService, Health } = loadRlsProtos();
  const client = new RateLimitService(address, credentials, options);
  const health = new Health(address, credentials, options);
  const unary = <T>(target: grpc.Client, method: string, request: unknown, deadlineMs: number): Promise<T> =>
    new Promise((resolve, reject) => {
      const call = (target as unknown as Record<string, (req: unknown, opts: grpc.CallOptions, cb: (error: grpc.ServiceError | null, answer: T) => void) => void>)[method]!;
      call.call(target, request, { deadline: Date.now() + deadlineMs }, (error, answer) => (error ? reject(error) : resolve(answer)));
    });
  return {
    ask: (domain: string, descriptors: Descriptor[], options: { hitsAddend?: number; deadlineMs?: number } = {}) =>
      unary<Answer>(client, "ShouldRateLimit", { domain, descriptors, ...(options.hitsAddend === undefined ? {} : { hits_addend: options.hitsAddend }) }, options.deadlineMs ?? 10_000),
    raw: (request: unknown, deadlineMs = 10_000) => unary<Answer>(client, "ShouldRateLimit", request, deadlineMs),
    health: (service = "") => unary<{ status: string }>(health, "Check", { service }, 10_000),
    close() {
      client.close();
      health.close();
    },
  };
}

export type RlsClient = ReturnType<typeof rlsClient>;

/** One descriptor from pairs: `d(["database", "users"])`. */
export function d(...entries: [string, string][]): Descriptor {
  return { entries: entries.map(([key, value]) => ({ key, value })) };
}

/**
 * Waits for the start of a second, so a test's few calls against a per-second limit land in
 * one window even on a loaded machine (they have 800 ms).
 */
export async function freshSecond(): Promise<void> {
  const intoSecondMs = Date.now() % 1000;
  if (intoSecondMs < 50) return;
  await new Promise((resolve) => setTimeout(resolve, 1000 - intoSecondMs + 5));
}

/** A unique value per run, so suites sharing a store never share a counter. */
export function unique(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
