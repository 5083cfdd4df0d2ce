import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type UsagePreset, presetReader } from "../../../src/gateway/usage-presets.js";
import { EXPECTED, type FixtureName } from "../../fixtures/llm/expected.js";

// The presets' readers against the providers' own framings (test/fixtures/llm/README.md),
// fed in pieces as a network delivers them: 7 bytes, then the rest cut at odd places.
const fixture = (name: string) => readFileSync(new URL(`../../fixtures/llm/${name}`, import.meta.url));

function read(preset: UsagePreset, type: string, bytes: Uint8Array, piece = 7) {
  const reader = presetReader(preset, type, null);
  for (let at = 0; at < bytes.length && !reader.done; at += piece) reader.push(bytes.subarray(at, at + piece));
  return reader.finish().usage;
}

describe("usage presets: the providers' framings", () => {
  for (const [name, expected] of Object.entries(EXPECTED) as [FixtureName, (typeof EXPECTED)[FixtureName]][]) {
    it(`${name} (${expected.preset}): input ${expected.input}, output ${expected.output}, model ${expected.model}`, () => {
      for (const piece of [7, 64, 1 << 20]) {
        const usage = read(expected.preset, expected.type, fixture(name), piece);
        expect(usage).toMatchObject({ input: expected.input, output: expected.output, model: expected.model });
        if (expected.preset !== "anthropic") expect(usage.total).toBe(expected.total);
        else expect(usage.total).toBeUndefined();
      }
    });
  }

  it("an OpenAI stream without include_usage reads no tokens (every chunk's usage absent), nor one cut before its usage chunk", () => {
    expect(read("openai", "text/event-stream", fixture("openai-chat-no-usage.sse"))).toEqual({ model: "gpt-4o-mini" });
    const full = fixture("openai-chat.sse");
    const cut = full.subarray(0, full.indexOf('"choices":[],'));
    expect(read("openai", "text/event-stream", cut)).toEqual({ model: "gpt-4o-mini" });
  });

  it("an Anthropic stream cut before message_delta has its input and no output (message_start's output_tokens is a first count)", () => {
    const full = fixture("anthropic-messages.sse");
    const cut = full.subarray(0, full.indexOf("event: message_delta"));
    expect(read("anthropic", "text/event-stream", cut)).toEqual({ input: 25, model: "claude-3-5-sonnet-20240620" });
  });

  it("a Responses stream cut before response.completed has no usage (response.created's is null)", () => {
    const full = fixture("openai-responses.sse");
    const cut = full.subarray(0, full.indexOf("event: response.completed"));
    expect(read("openai-responses", "text/event-stream", cut)).toEqual({ model: "gpt-4.1-2025-04-14" });
  });

  it("an Anthropic cache field that is no count makes the input unusable, not smaller", () => {
    const body = new TextEncoder().encode('{"model":"m","usage":{"input_tokens":10,"cache_read_input_tokens":"lots","output_tokens":3}}');
    expect(read("anthropic", "application/json", body)).toEqual({ input: "lots", output: 3, model: "m" });
  });

  it("an encoded answer the edge could not decode is not read, with the reason", () => {
    const reader = presetReader("openai", "application/json", "br");
    expect(reader.done).toBe(true);
    expect(reader.finish()).toEqual({ usage: {}, reason: "the answer is encoded (br)" });
  });
});
