// bench:llm only: the gateway config of its runs (Node and the Worker), the answers its origin
// gives, and the one switch between the estimate's two forms.

/** Tokens the key may spend: a token bucket that holds five answers (the issue's 10,000 a minute). */
export const BUDGET_TOKENS = 10_000;
/** What each answer reports: a prompt of 150 tokens and 1,850 of output, the request's whole max_tokens. */
export const USAGE = { prompt_tokens: 150, completion_tokens: 1850, total_tokens: 2000 };
/** The request's output bound, sent as its body's max_tokens (and, in the header form, as x-max-tokens). */
export const MAX_TOKENS = USAGE.completion_tokens;

/**
 * Which estimate the reserve/settle routes use: `"header"` reads `x-max-tokens` (the same number
 * as the body's max_tokens); `"body"` reads the body's `max_tokens` (`requestJson`), once the
 * gateway reads request bodies. The one constant to change.
 */
export const ESTIMATE_FORM = "body" as "header" | "body";
/** The body form's prompt rate: the gateway's default (one token for 4 bytes of body), stated. */
const PROMPT_TOKENS_PER_BYTE = 0.25;
const ESTIMATE = ESTIMATE_FORM === "header" ? { requestHeader: "x-max-tokens" } : { requestJson: ["max_tokens", "max_completion_tokens"], promptTokensPerByte: PROMPT_TOKENS_PER_BYTE };

/** What a request is reserved at: its max_tokens, plus (body form) its body's bytes × the prompt rate. */
export function estimateTokens(stream: boolean): number {
  return ESTIMATE_FORM === "header" ? MAX_TOKENS : MAX_TOKENS + Math.ceil(new TextEncoder().encode(requestBody(stream)).byteLength * PROMPT_TOKENS_PER_BYTE);
}

/** One estimate error, in tokens: what an answer uses beyond its reservation (the prompt, which a max_tokens estimate leaves out or underestimates). */
export const estimateErrorTokens = (stream: boolean): number => Math.max(0, USAGE.total_tokens - estimateTokens(stream));

const cost = { responseJson: "usage.total_tokens", max: 100_000 };

/**
 * /burst/*: the budget of five answers, per key (the authorization header); /load/*: a budget no
 * run reaches, for the throughput rounds. `peek` routes peek, then debit; `reserve` routes
 * reserve their estimate, then settle.
 */
export function llmConfig(origin: string): Record<string, unknown> {
  return {
    origin,
    policies: [
      { name: "tokens", algorithm: "token-bucket", limit: BUDGET_TOKENS, period: "1m" },
      { name: "unreached", algorithm: "fixed-window", limit: 1_000_000_000, period: "1s" },
    ],
    routes: [
      { match: { path: "/burst/peek/*", methods: ["POST"] }, key: "header:authorization", policies: ["tokens"], cost },
      { match: { path: "/burst/reserve/*", methods: ["POST"] }, key: "header:authorization", policies: ["tokens"], cost, estimate: ESTIMATE },
      { match: { path: "/load/peek/*", methods: ["POST"] }, key: "header:authorization", policies: ["unreached"], cost },
      { match: { path: "/load/reserve/*", methods: ["POST"] }, key: "header:authorization", policies: ["unreached"], cost, estimate: ESTIMATE },
    ],
  };
}

/** A chat completion request as an OpenAI client sends it. */
export function requestBody(stream: boolean): string {
  return JSON.stringify({
    model: "gpt-bench",
    max_tokens: MAX_TOKENS,
    messages: [{ role: "user", content: "Say hello." }],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}
