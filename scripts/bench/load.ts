import http from "node:http";

export interface LoadOptions {
  url: string;
  /** Requests in flight at once. */
  concurrency: number;
  /** How long to send for. */
  durationMs: number;
  /** Stop after this many requests instead (within durationMs). */
  requests?: number;
  /** Builds the request body of request number i (JSON). */
  body?: (index: number) => unknown;
  method?: string;
  headers?: Record<string, string>;
}

export interface LoadResult {
  requests: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers by status code. */
  statuses: Record<number, number>;
  errors: number;
  /** Every answer's latency, sorted, and how long the run took (to merge runs: mergeLoads). */
  latenciesMs: number[];
  elapsedMs: number;
}

function loadResult(latenciesMs: number[], elapsedMs: number, statuses: Record<number, number>, errors: number): LoadResult {
  latenciesMs.sort((a, b) => a - b);
  const at = (q: number) => latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(q * latenciesMs.length))] ?? 0;
  return { requests: latenciesMs.length, perSecond: (latenciesMs.length / elapsedMs) * 1000, p50Ms: at(0.5), p99Ms: at(0.99), statuses, errors, latenciesMs, elapsedMs };
}

/** Several runs of one load (turns taken with other targets) as one: answers and times summed. */
export function mergeLoads(runs: readonly LoadResult[]): LoadResult {
  const statuses: Record<number, number> = {};
  for (const run of runs) for (const [status, count] of Object.entries(run.statuses)) statuses[Number(status)] = (statuses[Number(status)] ?? 0) + count;
  const sum = (field: (run: LoadResult) => number) => runs.reduce((total, run) => total + field(run), 0);
  return loadResult(runs.flatMap((run) => run.latenciesMs), sum((run) => run.elapsedMs), statuses, sum((run) => run.errors));
}

/**
 * A small closed-loop HTTP load generator on keep-alive sockets: `concurrency` workers
 * each send a request, wait for the whole answer, and send the next, until the time is up.
 * It only ever targets the URL given (loopback in every benchmark here).
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const target = new URL(options.url);
  if (!["127.0.0.1", "localhost", "[::1]"].includes(target.hostname)) throw new Error(`benchmarks only send to loopback, not ${target.hostname}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });
  const latenciesMs: number[] = [];
  const statuses: Record<number, number> = {};
  let errors = 0;
  let index = 0;
  const deadline = performance.now() + options.durationMs;

  const one = (body: string | undefined) =>
    new Promise<number>((resolve, reject) => {
      const request = http.request(target, { method: options.method ?? "POST", agent, headers: { "content-type": "application/json", ...options.headers } }, (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
        response.on("error", reject);
      });
      request.on("error", reject);
      request.end(body);
    });

  const worker = async () => {
    while (performance.now() < deadline && (options.requests === undefined || index < options.requests)) {
      const current = index++;
      const body = options.body ? JSON.stringify(options.body(current)) : undefined;
      const startedMs = performance.now();
      try {
        const status = await one(body);
        latenciesMs.push(performance.now() - startedMs);
        statuses[status] = (statuses[status] ?? 0) + 1;
      } catch {
        errors++;
      }
    }
  };
  const startedMs = performance.now();
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const elapsedMs = performance.now() - startedMs;
  agent.destroy();
  return loadResult(latenciesMs, elapsedMs, statuses, errors);
}

/** Waits until `url` answers at all (any status). */
export async function waitForHttp(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(`${url} did not come up within ${timeoutMs} ms`);
}

/** Replaces (or appends) the `## title` section of BENCHMARKS.md, leaving the others alone. */
export async function writeBenchmarkSection(title: string, markdown: string): Promise<void> {
  const { readFile, writeFile } = await import("node:fs/promises");
  const path = new URL("../../BENCHMARKS.md", import.meta.url);
  let text = "# Benchmarks\n\nEach section is written by its `npm run bench:*` script; numbers are from one run on the project's 2-core machine.\n";
  try {
    text = await readFile(path, "utf8");
  } catch {
    // First benchmark to run writes the header.
  }
  const heading = `## ${title}`;
  const section = `${heading}\n\n${markdown.trim()}\n`;
  const start = text.indexOf(`${heading}\n`);
  if (start < 0) {
    text = `${text.trimEnd()}\n\n${section}`;
  } else {
    const next = text.indexOf("\n## ", start + heading.length);
    text = `${text.slice(0, start)}${section}${next < 0 ? "" : text.slice(next + 1)}`;
  }
  await writeFile(path, text.endsWith("\n") ? text : `${text}\n`);
}
