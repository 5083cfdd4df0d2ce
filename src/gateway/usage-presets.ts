import { JsonPathScan } from "./json-scan.js";
import { EventStreamUsage, MAX_EVENT_BYTES, isEventStream, unreadable } from "./usage.js";

/**
 * The providers' own answer formats (docs/counting.md, "Usage presets"): `"cost": { "usage":
 * "openai" }` reads an answer's input and output tokens, its total and its model wherever that
 * provider puts them, in a JSON answer and in a `text/event-stream` one, so a route can charge
 * each policy its own measure (measures.ts). Every value is handed on raw: what a reported value
 * costs is the one rule of reportedCost (src/http/counting.ts).
 *
 * - `openai`: Chat Completions. JSON: `usage.prompt_tokens`, `usage.completion_tokens`,
 *   `usage.total_tokens`, `model`. SSE (`stream_options.include_usage`): the chunk whose `usage`
 *   is an object (the last one, with empty `choices`, before `data: [DONE]`; every other chunk
 *   has `"usage": null`).
 * - `openai-responses`: the Responses API. JSON: `usage.input_tokens`, `usage.output_tokens`,
 *   `usage.total_tokens`, `model`. SSE: the event whose `response.usage` is an object
 *   (`response.completed`, or `response.incomplete` / `response.failed`, which report usage too).
 * - `anthropic`: Messages. JSON: `usage.input_tokens` plus `usage.cache_creation_input_tokens`
 *   and `usage.cache_read_input_tokens` (input is every input token the model read),
 *   `usage.output_tokens`, `model`; no total (input + output). SSE: `message_start`'s
 *   `message.usage` gives the input, `message_delta`'s `usage` the output (cumulative: the last
 *   one wins; it may restate the input fields, which then win). `message_start`'s own
 *   `output_tokens` is a first count, not the answer's: a stream cut before any
 *   `message_delta` has no output read.
 */
export const USAGE_PRESETS = ["openai", "openai-responses", "anthropic"] as const;
export type UsagePreset = (typeof USAGE_PRESETS)[number];

/** What an answer reported, each value as found (undefined: not found). */
export interface ReportedUsage {
  input?: unknown;
  output?: unknown;
  total?: unknown;
  model?: unknown;
}

export interface PresetReader {
  push(chunk: Uint8Array): void;
  /** True once no more of the body can change what was read (a JSON answer's usage and model found). */
  readonly done: boolean;
  /** Once, when the body ended (or broke off): what was read; `reason` when the body could not be read at all. */
  finish(): { usage: ReportedUsage; reason?: string };
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);
const isTokens = (value: unknown): value is number => typeof value === "number" && value >= 0;

/** input_tokens and the cache fields (absent or null: 0): a cache field that is no count makes the input unusable. */
function anthropicInput(usage: Record<string, unknown>): unknown {
  const input = usage.input_tokens;
  if (!isTokens(input)) return input;
  let sum = input;
  for (const name of ["cache_creation_input_tokens", "cache_read_input_tokens"]) {
    const part = usage[name];
    if (part === undefined || part === null) continue;
    if (!isTokens(part)) return part;
    sum += part;
  }
  return sum;
}

/** A JSON answer's `usage` object read as each preset names its fields. */
function fromUsageObject(preset: UsagePreset, usage: Record<string, unknown>): ReportedUsage {
  if (preset === "openai") return { input: usage.prompt_tokens, output: usage.completion_tokens, total: usage.total_tokens };
  if (preset === "openai-responses") return { input: usage.input_tokens, output: usage.output_tokens, total: usage.total_tokens };
  return { input: anthropicInput(usage), output: usage.output_tokens };
}

/** Folds one SSE event (a parsed JSON object) into what was read so far. */
function foldEvent(preset: UsagePreset, event: Record<string, unknown>, read: ReportedUsage): void {
  if (preset === "openai") {
    if (typeof event.model === "string") read.model = event.model;
    if (isObject(event.usage)) Object.assign(read, fromUsageObject(preset, event.usage));
    return;
  }
  if (preset === "openai-responses") {
    const response = event.response;
    if (!isObject(response)) return;
    if (typeof response.model === "string") read.model = response.model;
    if (isObject(response.usage)) Object.assign(read, fromUsageObject(preset, response.usage));
    return;
  }
  if (event.type === "message_start" && isObject(event.message)) {
    const message = event.message;
    if (typeof message.model === "string") read.model = message.model;
    if (isObject(message.usage)) read.input = anthropicInput(message.usage);
  } else if (event.type === "message_delta" && isObject(event.usage)) {
    const usage = event.usage;
    if (usage.output_tokens !== undefined) read.output = usage.output_tokens;
    if (usage.input_tokens !== undefined) read.input = anthropicInput(usage);
  }
}

/** A reader for one answer of `preset`: SSE or JSON by its content type; an encoded answer is not read. */
export function presetReader(preset: UsagePreset, contentType: string | null, contentEncoding: string | null, maxEventBytes = MAX_EVENT_BYTES): PresetReader {
  const refused = unreadable(contentEncoding);
  if (refused) {
    const result = refused.finish();
    return { push() {}, done: true, finish: () => ({ usage: {}, ...(!result.found && result.reason ? { reason: result.reason } : {}) }) };
  }
  if (isEventStream(contentType)) {
    const read: ReportedUsage = {};
    const stream = new EventStreamUsage([], maxEventBytes, (event) => foldEvent(preset, event, read));
    return {
      push: (chunk) => stream.push(chunk),
      done: false,
      finish: () => {
        stream.finish();
        return { usage: read };
      },
    };
  }
  return new JsonPreset(preset);
}

/** A JSON answer: two streaming scans side by side, one for `usage`, one for `model`; done once both found theirs. */
class JsonPreset implements PresetReader {
  readonly #preset: UsagePreset;
  readonly #usage = new JsonPathScan(["usage"]);
  readonly #model = new JsonPathScan(["model"]);

  constructor(preset: UsagePreset) {
    this.#preset = preset;
  }

  get done(): boolean {
    return this.#usage.done && this.#model.done;
  }

  push(chunk: Uint8Array): void {
    if (!this.#usage.done) this.#usage.push(chunk);
    if (!this.#model.done) this.#model.push(chunk);
  }

  finish(): { usage: ReportedUsage; reason?: string } {
    const usage = this.#usage.finish();
    const model = this.#model.finish();
    const read: ReportedUsage = usage.found && isObject(usage.value) ? fromUsageObject(this.#preset, usage.value) : {};
    if (model.found) read.model = model.value;
    return usage.found ? { usage: read } : { usage: read, ...(usage.reason ? { reason: usage.reason } : {}) };
  }
}
