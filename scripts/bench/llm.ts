// bench:llm — token budgets under concurrency (docs/counting.md, "LLM token budgets: reserve,
// then settle"). 64 clients at once against a budget that holds 5 answers, JSON and SSE, on
// `spillway serve` (memory, Redis) and the Worker under `wrangler dev` (local workerd, offline):
// the tokens that reached the origin ÷ the budget, peek-then-debit beside reserve/settle. Then
// closed-loop rounds of a reserve/settle route against a plain counted one (peek-then-debit),
// both loaded at once on the same gateway: requests per second and p50. On the Worker the key's LimiterObject counts the
// requests it was asked (storage-probe.ts): object requests per gateway request.
// BENCH_ROUNDS (default 3) and BENCH_DURATION_MS (default 3000, per load run) shorten or lengthen it.
import http from "node:http";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRedis } from "../redis-server.js";
import { freePort } from "../free-port.js";
import { type Target, ready, start, stopAll } from "./gateway-servers.js";
import { type LoadResult, mergeLoads, runLoad, writeBenchmarkSection } from "./load.js";
import { BUDGET_TOKENS, ESTIMATE_FORM, MAX_TOKENS, USAGE, estimateErrorTokens, estimateTokens, llmConfig, requestBody } from "./llm-config.js";
import { ANSWER_DELAY_MS, type LlmOrigin, startLlmOrigin } from "./llm-origin.js";

const CLIENTS = 64;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LOAD_MS = Number(process.env.BENCH_DURATION_MS ?? 3000);
/** Requests in flight per route; the two routes are loaded at once. */
const LOAD_CONCURRENCY = 8;
const TOKEN = "bench-token";
/** Above the default 50 ms: on the shared, loaded machine a burst of 64 calls outwaited it (a 503, failMode closed); the ratios are what this bench reads, not Redis's latency. */
const REDIS_TIMEOUT = "1s";
type Route = "peek" | "reserve";
type Gateway = Target & { worker?: boolean };

/** One POST with an OpenAI client's body and the estimate's header; answers the status once the body has been read. */
function post(agent: http.Agent, url: string, key: string, stream: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: "POST", agent, headers: { authorization: key, "content-type": "application/json", "x-max-tokens": String(MAX_TOKENS) } }, (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(requestBody(stream));
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const unique = () => Math.random().toString(36).slice(2, 10);

/** The object requests the key's LimiterObject was asked (RPC calls and alarms), once its carried debits went alone. */
async function objectRequests(target: Gateway, key: string): Promise<number> {
  await sleep(800);
  const answer = await fetch(`${target.url}/__meter?key=${encodeURIComponent(`header:authorization:${key}`)}`);
  const meter = (await answer.json()) as { calls: number; alarms: number };
  return meter.calls + meter.alarms;
}

interface Burst {
  reached: number;
  ratio: number;
  /** Worker only: object requests per gateway request. */
  perRequest?: number;
}

/** CLIENTS requests of one fresh key sent at once; what reached the origin. */
async function burst(target: Gateway, origin: LlmOrigin, route: Route, stream: boolean): Promise<Burst> {
  const key = `Bearer burst-${route}-${stream ? "sse" : "json"}-${unique()}`;
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
  const statuses = await Promise.all(Array.from({ length: CLIENTS }, () => post(agent, `${target.url}/burst/${route}/chat/completions`, key, stream)));
  agent.destroy();
  const unexpected = statuses.filter((status) => status !== 200 && status !== 429);
  if (unexpected.length > 0) throw new Error(`${target.label}: /burst/${route} answered ${unexpected.join(", ")}`);
  const reached = origin.reached(key);
  const result: Burst = { reached, ratio: (reached * USAGE.total_tokens) / BUDGET_TOKENS };
  if (target.worker) result.perRequest = (await objectRequests(target, key)) / CLIENTS;
  return result;
}

interface Loaded {
  load: LoadResult;
  objectRequests?: number;
}

/** A closed-loop run of one fresh key on a /load route (a budget no run reaches). */
async function load(target: Gateway, route: Route, durationMs = LOAD_MS): Promise<Loaded> {
  const key = `Bearer load-${route}-${unique()}`;
  const body = JSON.parse(requestBody(false)) as unknown;
  const result = await runLoad({ url: `${target.url}/load/${route}/chat/completions`, concurrency: LOAD_CONCURRENCY, durationMs, headers: { authorization: key, "x-max-tokens": String(MAX_TOKENS) }, body: () => body });
  const non200 = Object.entries(result.statuses).filter(([status]) => status !== "200");
  if (non200.length > 0 || result.errors > 0) throw new Error(`${target.label}: /load/${route} answered ${JSON.stringify(result.statuses)}, ${result.errors} errors`);
  return target.worker ? { load: result, objectRequests: await objectRequests(target, key) } : { load: result };
}

async function writeNodeConfig(origin: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-llm-"));
  const path = join(dir, "spillway.config.json");
  await writeFile(path, JSON.stringify(llmConfig(origin)));
  return path;
}

async function gateways(origin: LlmOrigin): Promise<{ targets: Gateway[]; stopRedis?: () => Promise<void> }> {
  const config = await writeNodeConfig(origin.url);
  const serve = async (args: string[]) => {
    const port = await freePort();
    return { url: `http://127.0.0.1:${port}`, child: start("node", ["bin/spillway.mjs", "serve", "--config", config, "--port", String(port), ...args], { SPILLWAY_TOKEN: TOKEN }) };
  };
  const redis = await startRedis().catch((error: Error) => error);
  const [workerPort, inspectorPort] = [await freePort(), await freePort()];
  const targets: Gateway[] = [
    { label: "Node, memory store", ...(await serve(["--store", "memory"])) },
    redis instanceof Error ? { label: "Node, Redis", url: "", skip: redis.message } : { label: "Node, Redis", ...(await serve(["--redis", redis.url, "--redis-timeout", REDIS_TIMEOUT])) },
    {
      label: "Worker (wrangler dev, Durable Object)",
      url: `http://127.0.0.1:${workerPort}`,
      worker: true,
      child: start(
        "wrangler",
        ["dev", "--config", "scripts/bench/wrangler.llm.toml", "--port", String(workerPort), "--inspector-port", String(inspectorPort), "--ip", "127.0.0.1", "--var", `ORIGIN_URL:${origin.url}`, "--log-level", "error"],
        {},
        "pipe",
      ),
    },
  ];
  for (const target of targets) {
    if (target.skip || !target.child) continue;
    const problem = await ready(`${target.url}/healthz`, target.child, 60_000);
    if (problem) target.skip = problem;
  }
  return { targets, stopRedis: redis instanceof Error ? undefined : () => redis.stop() };
}

const fixed = (value: number, digits = 2) => value.toFixed(digits);
const worst = (bursts: Burst[]) => bursts.reduce((most, one) => (one.ratio > most.ratio ? one : most));

async function main(): Promise<void> {
  const origin = await startLlmOrigin();
  const { targets, stopRedis } = await gateways(origin);
  try {
    const live = targets.filter((target) => !target.skip);
    for (const target of targets) if (target.skip) console.log(`${target.label}: skipped (${target.skip})`);
    // Warm-up: each target's first requests pay for compiling (and, on the Worker, for its objects' start).
    for (const target of live) for (const route of ["peek", "reserve"] as const) await load(target, route, 1000);

    const bursts = new Map<string, Burst[]>();
    const loads = new Map<string, Loaded[]>();
    const push = <T>(map: Map<string, T[]>, name: string, value: T) => map.set(name, [...(map.get(name) ?? []), value]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of live) {
        for (const stream of [false, true]) {
          for (const route of ["peek", "reserve"] as const) push(bursts, `${target.label}|${route}|${stream}`, await burst(target, origin, route, stream));
        }
        // Paired: both routes loaded at once on the same gateway, so the shared machine's load
        // (other work, the load generator, the origin) weighs on both alike; the ratio is what to read.
        const [plain, reserved] = await Promise.all([load(target, "peek"), load(target, "reserve")]);
        push(loads, `${target.label}|peek`, plain);
        push(loads, `${target.label}|reserve`, reserved);
        console.log(`round ${round + 1}/${ROUNDS}: ${target.label} done`);
      }
    }

    const burstLines = [
      `| gateway | answer | peek-then-debit: reached the origin | tokens ÷ budget | reserve/settle: reached the origin | tokens ÷ budget | bound (1 + errors ÷ budget) | Worker object requests per request (peek / reserve) |`,
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ];
    const goals: string[] = [];
    let reserveWithinBound = true;
    let workerPerRequestMost = 0;
    for (const target of live) {
      for (const stream of [false, true]) {
        const peek = worst(bursts.get(`${target.label}|peek|${stream}`)!);
        const reserve = worst(bursts.get(`${target.label}|reserve|${stream}`)!);
        const bound = 1 + (reserve.reached * estimateErrorTokens(stream)) / BUDGET_TOKENS;
        if (reserve.ratio > bound) reserveWithinBound = false;
        const perRequest = target.worker ? `${fixed(peek.perRequest!)} / ${fixed(reserve.perRequest!)}` : "—";
        if (target.worker) workerPerRequestMost = Math.max(workerPerRequestMost, peek.perRequest!, reserve.perRequest!);
        burstLines.push(`| ${target.label} | ${stream ? "SSE" : "JSON"} | ${peek.reached} of ${CLIENTS} | ${fixed(peek.ratio)} | ${reserve.reached} of ${CLIENTS} | ${fixed(reserve.ratio)} | ${fixed(bound, 3)} | ${perRequest} |`);
      }
    }

    const loadLines = [
      "| gateway | plain counted route req/s | reserve/settle route req/s | req/s ratio | plain p50 ms | reserve/settle p50 ms | p50 ratio (plain ÷ reserve) | Worker object requests per request (plain / reserve) |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ];
    let throughputMet = true;
    for (const target of live) {
      const merged = (route: Route) => {
        const runs = loads.get(`${target.label}|${route}`)!;
        const load = mergeLoads(runs.map((run) => run.load));
        const objects = runs.reduce((sum, run) => sum + (run.objectRequests ?? 0), 0);
        return { load, perRequest: objects / load.requests };
      };
      const plain = merged("peek");
      const reserve = merged("reserve");
      const rate = reserve.load.perSecond / plain.load.perSecond;
      const p50 = plain.load.p50Ms / reserve.load.p50Ms;
      if (rate < 0.9 || p50 < 0.9) throughputMet = false;
      const perRequest = target.worker ? `${fixed(plain.perRequest)} / ${fixed(reserve.perRequest)}` : "—";
      if (target.worker) workerPerRequestMost = Math.max(workerPerRequestMost, plain.perRequest, reserve.perRequest);
      loadLines.push(`| ${target.label} | ${Math.round(plain.load.perSecond)} | ${Math.round(reserve.load.perSecond)} | ${fixed(rate)} | ${fixed(plain.load.p50Ms)} | ${fixed(reserve.load.p50Ms)} | ${fixed(p50)} | ${perRequest} |`);
    }
    goals.push(
      `- tokens that reached the origin ÷ budget, reserve/settle, every gateway and framing: at most ${fixed(Math.max(...live.flatMap((target) => [false, true].map((stream) => worst(bursts.get(`${target.label}|reserve|${stream}`)!).ratio))))}, within spent ≤ budget + Σ estimate errors: ${reserveWithinBound ? "met" : "NOT met"} (peek-then-debit: up to ${fixed(Math.max(...live.flatMap((target) => [false, true].map((stream) => worst(bursts.get(`${target.label}|peek|${stream}`)!).ratio))))});`,
      `- a reserve/settle route's req/s and p50 ÷ a plain counted route's ≥ 0.9 on every gateway: ${throughputMet ? "met" : "NOT met"};`,
      live.some((target) => target.worker) ? `- Worker object requests per gateway request ≤ 1.1: the most, ${fixed(workerPerRequestMost)}: ${workerPerRequestMost <= 1.1 ? "met" : "NOT met"}.` : "- Worker: skipped.",
    );
    const skipped = targets.filter((target) => target.skip).map((target) => `${target.label}: skipped (${target.skip})`);
    const markdown = [
      `\`npm run bench:llm\`: ${CLIENTS} clients send one OpenAI-style chat completion each, at once, with one key (\`authorization\`), against a token bucket of ${BUDGET_TOKENS.toLocaleString("en")} tokens a minute: five answers' worth (each answer reports \`usage.total_tokens\` ${USAGE.total_tokens}: ${USAGE.prompt_tokens} prompt, ${USAGE.completion_tokens} output, after ${ANSWER_DELAY_MS} ms; the route's cost is \`{ "responseJson": "usage.total_tokens", "max": 100000 }\`). ${ESTIMATE_FORM === "header" ? `The reserve/settle route's estimate is the request's max_tokens (${MAX_TOKENS}), read from \`x-max-tokens\` (the same number as the body's max_tokens: \`ESTIMATE_FORM\` in scripts/bench/llm-config.ts switches it to the body's \`requestJson\`)` : `The reserve/settle route's estimate is read from the body: its max_tokens (${MAX_TOKENS}) plus its bytes × 0.25 (\`"requestJson": ["max_tokens", "max_completion_tokens"]\`): ${estimateTokens(false)} for JSON, ${estimateTokens(true)} for SSE`}; so each answer uses ${estimateErrorTokens(false)} (JSON) or ${estimateErrorTokens(true)} (SSE) tokens past its reservation (its prompt): one estimate error. \`spillway serve --redis\` runs with \`--redis-timeout ${REDIS_TIMEOUT}\` (the machine is shared). The worst of ${ROUNDS} rounds is shown; the bound is budget + the estimate errors of the requests that reached the origin, ÷ budget.`,
      "",
      ...burstLines,
      "",
      `Throughput: the two routes loaded at once on the same gateway (paired rounds: the shared machine's load weighs on both alike), ${LOAD_CONCURRENCY} requests in flight each, one key each, a budget no run reaches, the origin answering JSON at once; ${ROUNDS} rounds of ${LOAD_MS / 1000} s, merged. The plain route peeks, then debits ${USAGE.total_tokens}; the reserve/settle route checks its estimate (${estimateTokens(false)}), then settles the difference (${USAGE.total_tokens - estimateTokens(false)}). The machine is shared with other work: read the ratios.`,
      "",
      ...loadLines,
      "",
      "On the Worker a reservation is a check, which writes the key's row in its object before the answer goes out (Durable Objects hold a reply until its write is durable), where the plain route's peeks write nothing and the debits they carry share one write: with 8 requests in flight on one key the reservations' writes queue at the object, which is the Worker's p50 gap here; in bench:cost, one request after another, both write 1.00 rows per request.",
      "",
      "Goals, this run:",
      ...goals,
      ...(skipped.length > 0 ? ["", ...skipped] : []),
    ].join("\n");
    console.log(`\n${markdown}`);
    await writeBenchmarkSection("LLM token budgets (bench:llm)", markdown);
    console.log("\nwritten to BENCHMARKS.md");
  } finally {
    stopAll();
    await stopRedis?.();
    await origin.close();
  }
}

await main();
