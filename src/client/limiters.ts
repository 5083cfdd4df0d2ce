import { describeValue } from "../core/validation.js";
import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, CreditsResult, Decision, ExtendResult, ReleaseResult } from "../core/types.js";
import { OverloadedError, type StoreHealth, StoreFaultError } from "../core/limiter.js";
import { OVERLOADED_PREFIX, OVERLOADED_TYPE, STORE_FAULT_PREFIX, STORE_FAULT_TYPE, STORE_UNAVAILABLE_PREFIX } from "../core/wire.js";
import { LimiterRequestError, LimiterUnavailableError } from "./errors.js";
import { functionOption, integerOption } from "./options.js";
import { type PolicyRef, type PolicySpec, type RemoteLimiter, policyToWire } from "./target.js";

// No Node-only imports here: these adapters run in Workers as well as in Node.

type WirePolicy = string | PolicySpec | Array<string | PolicySpec>;

export interface HttpLimiterOptions {
  /** Base URL of a Spillway server (`https://limits.example.com`); `/v1/…` is appended. */
  url: string;
  /** The server's SPILLWAY_TOKEN, sent as `Authorization: Bearer …`. */
  token: string;
  /** Give up on a call after this long, in ms (default 5 000), plus the call's own maxWaitMs for acquire. */
  timeoutMs?: number;
  /** The fetch to use (default: the global one), e.g. a service binding's `fetch`. */
  fetch?: typeof fetch;
}

/**
 * The Spillway HTTP API (README "HTTP API") as a Limiter. 503, other 5xx, network errors and timeouts
 * throw LimiterUnavailableError, except a 503 whose problem type is a store fault, which
 * throws StoreFaultError, or an overload (shed), which throws OverloadedError (no failMode may
 * hide either); 400/401/404/413 throw LimiterRequestError with the server's detail.
 *
 * @example
 * const limiter = httpLimiter({ url: "https://limits.example.com", token: env.SPILLWAY_TOKEN });
 * const throttle = createThrottle({ limiter, key: "github", policy: "github-rest" });
 */
export function httpLimiter(options: HttpLimiterOptions): RemoteLimiter {
  if (typeof options !== "object" || options === null) throw new TypeError(`httpLimiter: options: must be an object like { url, token }, got ${describeValue(options)}`);
  let base: URL;
  try {
    base = new URL(options.url);
    if (base.protocol !== "http:" && base.protocol !== "https:") throw new Error("not http");
  } catch {
    throw new TypeError(`httpLimiter: url: must be an http(s) URL, got ${describeValue(options.url)}`);
  }
  if (typeof options.token !== "string" || options.token === "") throw new TypeError(`httpLimiter: token: must be a non-empty string (the server's SPILLWAY_TOKEN), got ${describeValue(options.token)}`);
  const timeoutMs = integerOption("httpLimiter: timeoutMs", options.timeoutMs, 1, 600_000, 5_000);
  const fetchImpl = functionOption<typeof fetch>("httpLimiter: fetch", options.fetch, undefined) ?? ((input, init) => globalThis.fetch(input, init));
  const root = base.href.endsWith("/") ? base.href : `${base.href}/`;

  async function call(method: "GET" | "POST", path: string, body: unknown, okStatuses: number[], extraWaitMs = 0): Promise<unknown> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs + extraWaitMs);
    let response: Response;
    try {
      response = await fetchImpl(new URL(path, root), {
        method,
        headers: { authorization: `Bearer ${options.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
      });
    } catch (error) {
      clearTimeout(timer);
      const why = controller.signal.aborted ? `no answer within ${timeoutMs + extraWaitMs} ms` : networkFailure(error);
      throw new LimiterUnavailableError(`limiter at ${base.host} unreachable: ${why}`, { cause: error });
    }
    try {
      const text = await response.text();
      if (okStatuses.includes(response.status)) return text === "" ? undefined : parseJson(text);
      const detail = problemDetail(text) ?? response.statusText ?? "";
      // A store fault must never look like an outage: failMode "open" would admit on it.
      const type = problemType(text);
      if (type === STORE_FAULT_TYPE) throw new StoreFaultError(`limiter at ${base.host}: ${detail}`);
      // Shed by an overloaded limiter: nothing was decided, and no failMode may admit on it either.
      if (type === OVERLOADED_TYPE) throw new OverloadedError(`limiter at ${base.host}: ${detail}`);
      if (response.status >= 500) throw new LimiterUnavailableError(`limiter at ${base.host} answered ${response.status}: ${detail}`, { status: response.status });
      throw new LimiterRequestError(response.status, detail);
    } catch (error) {
      if (error instanceof LimiterUnavailableError || error instanceof LimiterRequestError || error instanceof StoreFaultError || error instanceof OverloadedError) throw error;
      throw new LimiterUnavailableError(`limiter at ${base.host} sent an unreadable answer: ${String((error as Error)?.message ?? error)}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    kind: "http",
    resolvesPolicyNames: true,
    async check(key, policy, check) {
      return asDecision(await call("POST", "v1/check", { key, policy: policyToWire(policy), ...checkBody(check) }, [200, 429]));
    },
    async peek(key, policy) {
      return asDecision(await call("POST", "v1/peek", { key, policy: policyToWire(policy) }, [200]));
    },
    async debit(key, policy, cost, spentAtMs) {
      // A debit answers 200 with the state after it, whether or not the key is now over.
      // spentAtMs only when given: a server older than it refuses a field it does not know.
      return asDecision(await call("POST", "v1/check", { key, policy: policyToWire(policy), cost, mode: "debit", ...spentField(spentAtMs) }, [200]));
    },
    async reset(key, policy) {
      await call("POST", "v1/reset", { key, policy: policyToWire(policy) }, [200, 204]);
    },
    async acquire(key, policy, acquire) {
      const body = { key, policy: policyToWire(policy), ...acquireBody(acquire) };
      return asAcquireResult(await call("POST", "v1/acquire", body, [200, 429], acquire.maxWaitMs));
    },
    async release(key, policy, leaseId) {
      return asShape<ReleaseResult>(await call("POST", "v1/release", { key, policy: policyToWire(policy), leaseId }, [200]), "released");
    },
    async extend(key, policy, leaseId, leaseMs) {
      // The route mirrors the RPC method and the Limiter interface.
      const body = { key, policy: policyToWire(policy), leaseId, ...(leaseMs === undefined ? {} : { leaseMs }) };
      return asShape<ExtendResult>(await call("POST", "v1/extend", body, [200]), "extended");
    },
    async credits(key, policy, change) {
      return creditsResult(await call("POST", "v1/credits", { key, policy: policyToWire(policy), ...creditsBody(change) }, [200]));
    },
    async health(): Promise<StoreHealth> {
      try {
        const answer = (await call("GET", "healthz", undefined, [200])) as Partial<StoreHealth> | undefined;
        return { ok: answer?.ok === true, store: `http:${answer?.store ?? "unknown"}` };
      } catch (error) {
        return { ok: false, store: "http", detail: (error as Error).message };
      }
    },
  };
}

/** The service binding's RPC surface (README "Calling it from other Workers"): the HTTP API's bodies as arguments, its answers as results. */
export interface SpillwayBinding {
  check(request: { key: string; policy: WirePolicy; cost?: number; mode?: CheckOptions["mode"] | "debit"; maxWaitMs?: number; spentAtMs?: number }): Promise<Decision>;
  peek(request: { key: string; policy: WirePolicy }): Promise<Decision>;
  reset(request: { key: string; policy: WirePolicy }): Promise<void>;
  acquire(request: { key: string; policy: WirePolicy; maxWaitMs?: number; leaseMs?: number }): Promise<AcquireResult>;
  release(request: { key: string; policy: WirePolicy; leaseId: string }): Promise<ReleaseResult>;
  extend(request: { key: string; policy: WirePolicy; leaseId: string; leaseMs?: number }): Promise<ExtendResult>;
  /** Absent on a Spillway older than credits. */
  credits?(request: { key: string; policy: WirePolicy; add?: number; set?: number }): Promise<{ key: string; policy: string; remaining: number }>;
}

/** A credits change as the wire carries it: `{ add }` or `{ set }`, nothing else. */
function creditsBody(change: CreditsChange): { add: number } | { set: number } {
  return "add" in change ? { add: change.add } : { set: change.set };
}

function creditsResult(answer: unknown): CreditsResult {
  const remaining = (answer as Partial<CreditsResult> | null)?.remaining;
  if (typeof remaining !== "number") throw new LimiterUnavailableError(`limiter sent an answer without "remaining": ${describeValue(answer)}`);
  return { remaining };
}

/**
 * A Spillway service binding (`[[services]]` with the RPC entrypoint) as a Limiter. The
 * binding is the capability, so no token. Errors the entrypoint throws for bad input (they
 * name the field) become LimiterRequestError (400, or 404 for an unknown policy name); a
 * store fault (`store fault: …`) becomes StoreFaultError and a shed call (`overloaded: …`)
 * OverloadedError, which no failMode may hide; every
 * other failure (`store unavailable: …`, binding unreachable, retryable) becomes LimiterUnavailableError.
 *
 * @example const throttle = createThrottle({ limiter: bindingLimiter(env.SPILLWAY), key: "openai", policy: "openai-rpm" });
 */
export function bindingLimiter(binding: SpillwayBinding): RemoteLimiter {
  // A loopback binding (`ctx.exports.SpillwayRpc`) is callable, so typeof says "function", not "object".
  if ((typeof binding !== "object" && typeof binding !== "function") || binding === null || typeof binding.check !== "function") {
    throw new TypeError(`binding: must be a Spillway service binding with RPC methods check, peek, reset, acquire, release, extend, got ${describeValue(binding)}`);
  }
  const rpc = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw rpcError(error);
    }
  };
  return {
    kind: "binding",
    resolvesPolicyNames: true,
    check: (key, policy, check) => rpc(async () => asDecision(await binding.check({ key, policy: policyToWire(policy), ...checkBody(check) }))),
    peek: (key, policy) => rpc(async () => asDecision(await binding.peek({ key, policy: policyToWire(policy) }))),
    debit: (key, policy, cost, spentAtMs) => rpc(async () => asDecision(await binding.check({ key, policy: policyToWire(policy), cost, mode: "debit", ...spentField(spentAtMs) }))),
    reset: (key, policy) => rpc(() => binding.reset({ key, policy: policyToWire(policy) })),
    acquire: (key, policy, acquire) => rpc(async () => asAcquireResult(await binding.acquire({ key, policy: policyToWire(policy), ...acquireBody(acquire) }))),
    release: (key, policy, leaseId) => rpc(async () => asShape<ReleaseResult>(await binding.release({ key, policy: policyToWire(policy), leaseId }), "released")),
    extend: (key, policy, leaseId, leaseMs) =>
      rpc(async () => asShape<ExtendResult>(await binding.extend({ key, policy: policyToWire(policy), leaseId, ...(leaseMs === undefined ? {} : { leaseMs }) }), "extended")),
    credits: (key, policy, change) =>
      rpc(async () => {
        if (typeof binding.credits !== "function") throw new TypeError("binding: this Spillway has no credits method (deploy a version with credits)");
        return creditsResult(await binding.credits({ key, policy: policyToWire(policy), ...creditsBody(change) }));
      }),
    async health() {
      try {
        await binding.peek({ key: "spillway:health", policy: { name: "health", limit: 1, period: 1000 } });
        return { ok: true, store: "binding" };
      } catch (error) {
        return { ok: false, store: "binding", detail: (error as Error).message };
      }
    },
  };
}

/**
 * workerd keeps an RPC error's message but not its class, and marks errors thrown by the
 * callee's own code with `remote: true`. The entrypoint (SpillwayRpc) marks store failures
 * with a stable prefix (STORE_UNAVAILABLE_PREFIX, STORE_FAULT_PREFIX) and reports bad input
 * as `<field path>: <rule>` (`policy.limit: must be …`, `policy: no policy named "x" …`), a
 * path without spaces. Anything else (network, an overloaded isolate) means no decision was made.
 */
function rpcError(error: unknown): Error {
  if (error instanceof LimiterUnavailableError || error instanceof LimiterRequestError || error instanceof StoreFaultError || error instanceof OverloadedError) return error;
  const found = error as { message?: unknown; retryable?: unknown; remote?: unknown } | null;
  const message = String(found?.message ?? error);
  if (message.startsWith(STORE_UNAVAILABLE_PREFIX)) return new LimiterUnavailableError(`limiter binding: ${message}`, { cause: error });
  // Not "unavailable": that is a StoreUnavailableError, and a failMode "open" would admit traffic on a bug.
  if (message.startsWith(STORE_FAULT_PREFIX)) return new StoreFaultError(`limiter binding: ${message}`, { cause: error });
  if (message.startsWith(OVERLOADED_PREFIX)) return new OverloadedError(`limiter binding: ${message}`, { cause: error });
  if (found?.remote === true && found.retryable !== true && /^[\w.-]+: /.test(message)) {
    return new LimiterRequestError(/: no policy named /.test(message) ? 404 : 400, message, { cause: error });
  }
  return new LimiterUnavailableError(`limiter binding unavailable: ${message}`, { cause: error });
}

/** A refund's spend time as the wire carries it (`spentAtMs`, whole ms), or nothing. */
function spentField(spentAtMs: number | undefined): { spentAtMs?: number } {
  return spentAtMs === undefined ? {} : { spentAtMs: Math.floor(spentAtMs) };
}

function checkBody(options: CheckOptions): { cost: number; mode: CheckOptions["mode"]; maxWaitMs: number } {
  return { cost: options.cost, mode: options.mode, maxWaitMs: options.maxWaitMs };
}

function acquireBody(options: AcquireOptions): { maxWaitMs: number; leaseMs?: number } {
  return options.leaseMs === undefined ? { maxWaitMs: options.maxWaitMs } : { maxWaitMs: options.maxWaitMs, leaseMs: options.leaseMs };
}

function parseJson(text: string): unknown {
  return JSON.parse(text) as unknown;
}

function problemType(text: string): string | undefined {
  try {
    const type = (JSON.parse(text) as { type?: unknown }).type;
    return typeof type === "string" ? type : undefined;
  } catch {
    return undefined;
  }
}

function problemDetail(text: string): string | undefined {
  try {
    const problem = JSON.parse(text) as { detail?: unknown; title?: unknown };
    if (typeof problem.detail === "string") return problem.detail;
    if (typeof problem.title === "string") return problem.title;
  } catch {
    // Not a problem body: fall back to the status text.
  }
  return text.slice(0, 200) || undefined;
}

/** A limiter's answer must at least say whether it allowed, or the client cannot act on it. */
function asDecision(value: unknown): Decision {
  const decision = value as Partial<Decision> | null;
  if (typeof decision?.allowed !== "boolean") throw new LimiterUnavailableError(`limiter sent something that is not a decision: ${describeValue(value)}`);
  return { ...decision, waitMs: typeof decision.waitMs === "number" ? decision.waitMs : 0 } as Decision;
}

function asAcquireResult(value: unknown): AcquireResult {
  const result = value as Partial<{ acquired: boolean; leaseId: string }> | null;
  if (typeof result?.acquired !== "boolean" || (result.acquired && typeof result.leaseId !== "string")) {
    throw new LimiterUnavailableError(`limiter sent something that is not an acquire result: ${describeValue(value)}`);
  }
  return value as AcquireResult;
}

function asShape<T>(value: unknown, flag: string): T {
  if (typeof (value as Record<string, unknown> | null)?.[flag] !== "boolean") throw new LimiterUnavailableError(`limiter sent an answer without "${flag}": ${describeValue(value)}`);
  return value as T;
}

/**
 * A failed fetch in words that say why: undici's "fetch failed" keeps the reason in `cause`
 * (ECONNREFUSED, ENOTFOUND, a TLS error), an AggregateError when it tried several addresses.
 * `fetch failed (ECONNREFUSED 127.0.0.1:8787)`.
 */
export function networkFailure(error: unknown): string {
  const message = String((error as Error)?.message ?? error);
  const cause = (error as { cause?: unknown })?.cause;
  if (cause === null || typeof cause !== "object") return message;
  const tried = cause instanceof AggregateError ? cause.errors : [cause];
  const reasons = [...new Set(tried.map((one: unknown) => socketReason(one)).filter((one): one is string => one !== undefined))];
  if (reasons.length === 0) {
    const text = (cause as Error).message;
    return text && text !== message ? `${message} (${text})` : message;
  }
  return `${message} (${reasons.join(", ")})`;
}

function socketReason(error: unknown): string | undefined {
  const { code, address, port, hostname, message } = (error ?? {}) as { code?: unknown; address?: unknown; port?: unknown; hostname?: unknown; message?: unknown };
  if (typeof code !== "string") return typeof message === "string" && message !== "" ? message : undefined;
  const where = typeof address === "string" ? (typeof port === "number" ? `${address.includes(":") ? `[${address}]` : address}:${port}` : address) : typeof hostname === "string" ? hostname : "";
  return where ? `${code} ${where}` : code;
}
