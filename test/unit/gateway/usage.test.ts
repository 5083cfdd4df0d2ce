import { describe, expect, it } from "vitest";
import { usageReader, valueAt } from "../../../src/gateway/usage.js";

// The usage reader, fed the chunks an edge would see: split anywhere, even inside a
// multi-byte character or between a CR and its LF.
const encoder = new TextEncoder();
const PATH = ["usage", "total_tokens"];

/** Feeds `text` in pieces of `size` bytes and answers what the reader found. */
function read(text: string, contentType: string | null, size = 3, maxBytes?: number) {
  const reader = usageReader(PATH, contentType, null, maxBytes);
  const bytes = encoder.encode(text);
  for (let at = 0; at < bytes.length; at += size) reader.push(bytes.subarray(at, at + size));
  return reader.finish();
}

describe("usage reader: JSON answers", () => {
  it("reads a dotted path at the body's end, whatever the chunking", () => {
    const body = JSON.stringify({ id: "é", usage: { prompt_tokens: 3, total_tokens: 42 } });
    for (const size of [1, 2, 7, 1000]) expect(read(body, "application/json", size)).toEqual({ found: true, value: 42 });
  });

  it("reports absent paths and non-JSON bodies as not found", () => {
    expect(read(JSON.stringify({ usage: {} }), "application/json")).toEqual({ found: false });
    expect(read(JSON.stringify({ usage: 5 }), "application/json")).toEqual({ found: false });
    expect(read(JSON.stringify([{ usage: { total_tokens: 5 } }]), "application/json")).toEqual({ found: false });
    expect(read("<html>", "text/html")).toEqual({ found: false, reason: "the answer is not JSON" });
    expect(read("", "application/json")).toEqual({ found: false });
  });

  it("hands back whatever value sits at the path (the caller decides if it is a cost)", () => {
    expect(read(JSON.stringify({ usage: { total_tokens: "12" } }), "application/json")).toEqual({ found: true, value: "12" });
    expect(read(JSON.stringify({ usage: { total_tokens: null } }), null)).toEqual({ found: true, value: null });
  });

  it("indexes arrays by numeric segments", () => {
    const reader = usageReader(["choices", "1", "n"], "application/json", null);
    reader.push(encoder.encode(JSON.stringify({ choices: [{ n: 1 }, { n: 2 }] })));
    expect(reader.finish()).toEqual({ found: true, value: 2 });
  });

  it("does not read an encoded answer", () => {
    const reader = usageReader(PATH, "application/json", "gzip");
    reader.push(new Uint8Array([31, 139, 8]));
    expect(reader.finish()).toEqual({ found: false, reason: "the answer is encoded (gzip)" });
  });
});

describe("usage reader: the streaming JSON scan finds what JSON.parse finds", () => {
  const documents: [string, unknown][] = [
    ["usage at the end, after a long content", { id: "x", choices: [{ message: { content: 'a "quoted" {brace} [bracket] \\ back\nslash é' } }], usage: { total_tokens: 17 } }],
    ["usage first", { usage: { total_tokens: 3, prompt_tokens: 1 }, choices: [] }],
    ["a decoy in a string and in a nested object", { note: '{"usage":{"total_tokens":1}}', deep: { usage: { total_tokens: 2 } }, usage: { total_tokens: 99 } }],
    ["nested arrays before it", { a: [[1, [2, { usage: 5 }]], [], {}], usage: { other: [1, 2], total_tokens: 1e400 } }],
    ["a huge integer", JSON.parse('{"usage":{"total_tokens":9007199254740993}}')],
    ["a string value", { usage: { total_tokens: "12" } }],
    ["an object value", { usage: { total_tokens: { n: 1 } } }],
    ["null, true, false around it", { a: null, b: true, c: false, usage: { x: null, total_tokens: 0 } }],
    ["no usage", { error: { message: "bad request", code: 400 } }],
    ["usage not an object", { usage: [1, 2] }],
  ];
  for (const [name, document] of documents) {
    it(name, () => {
      const text = JSON.stringify(document, null, name.includes("first") ? 2 : undefined).replace("1e400", "1e400");
      const expected = valueAt(JSON.parse(text), PATH);
      for (const size of [1, 2, 3, 5, 64]) expect(read(text, "application/json", size)).toEqual(expected);
    });
  }

  it("skips strings of quotes and backslashes, however the chunks split them", () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = ['"', "\\", "{", "}", "[", "]", ",", ":", "a", "é"];
    for (let round = 0; round < 200; round++) {
      const text = Array.from({ length: 1 + Math.floor(random() * 30) }, () => alphabet[Math.floor(random() * alphabet.length)]).join("");
      const body = JSON.stringify({ [text]: text, nested: { s: [text, { usage: { total_tokens: -1 } }] }, usage: { total_tokens: round } });
      for (const size of [1, 2, 3, 7]) expect(read(body, "application/json", size)).toEqual({ found: true, value: round });
    }
  });

  it("reads numbers as JSON writes them (1e400 is Infinity), escaped keys, and array indexes", () => {
    expect(read('{"usage":{"total_tokens":1e400}}', "application/json", 2)).toEqual({ found: true, value: Infinity });
    expect(read('{"us\\u0061ge":{"total_tokens":6}}', "application/json", 4)).toEqual({ found: true, value: 6 });
    expect(read('\ufeff {"usage": {"total_tokens" : 8 } }', "application/json", 1)).toEqual({ found: true, value: 8 });
    const reader = usageReader(["choices", "2", "n"], "application/json", null);
    reader.push(encoder.encode('{"choices":[{"n":1},[{"n":5}],{"n":3},{"n":4}]}'));
    expect(reader.finish()).toEqual({ found: true, value: 3 });
  });

  it("is done at the path's value, and holds none of the rest", () => {
    const reader = usageReader(PATH, "application/json", null);
    reader.push(encoder.encode('{"usage":{"total_tokens":42},"tail":"'));
    expect(reader.done).toBe(true);
    reader.push(encoder.encode("x".repeat(1000)));
    expect(reader.finish()).toEqual({ found: true, value: 42 });
  });

  it("a body that breaks off before the path says so; one that is not JSON is done at once", () => {
    expect(read('{"id":"x","choices":[{"message":{"content":"he', "application/json")).toEqual({ found: false, reason: "the answer broke off before its usage" });
    const html = usageReader(PATH, "text/html", null);
    html.push(encoder.encode("<!doctype html>"));
    expect(html.done).toBe(true);
  });

  it("reads a 2 MiB answer without keeping it", () => {
    const body = JSON.stringify({ choices: [{ message: { content: "x".repeat(2 * 1024 * 1024) } }], usage: { total_tokens: 50_000 } });
    expect(read(body, "application/json", 65536)).toEqual({ found: true, value: 50_000 });
  });
});

describe("usage reader: event streams", () => {
  const sse = "text/event-stream; charset=utf-8";

  it("takes the last data event that has the path", () => {
    const stream = [
      'data: {"usage":{"total_tokens":1}}',
      "",
      ": a comment",
      "event: delta",
      'data: {"choices":[{"delta":{"content":"héllo"}}]}',
      "",
      'data: {"usage":{"total_tokens":57}}',
      "",
      "data: [DONE]",
      "",
      "",
    ].join("\n");
    for (const size of [1, 4, 1000]) expect(read(stream, sse, size)).toEqual({ found: true, value: 57 });
  });

  it("handles CRLF and CR line endings, even split between chunks", () => {
    const crlf = 'data: {"usage":{"total_tokens":8}}\r\n\r\ndata: {"x":1}\r\n\r\n';
    for (const size of [1, 2, 3, 5]) expect(read(crlf, sse, size)).toEqual({ found: true, value: 8 });
    expect(read('data: {"usage":{"total_tokens":9}}\r\rdata: {}\r\r', sse, 1)).toEqual({ found: true, value: 9 });
  });

  it("joins the data lines of one event", () => {
    expect(read('data: {"usage":\ndata: {"total_tokens":3}}\n\n', sse)).toEqual({ found: true, value: 3 });
  });

  it("reads the last event even when the stream ends without its blank line", () => {
    expect(read('data: {"a":1}\n\ndata: {"usage":{"total_tokens":4}}', sse)).toEqual({ found: true, value: 4 });
  });

  it("ignores other fields, bad JSON and events over the cap", () => {
    expect(read('id: {"usage":{"total_tokens":4}}\n\ndata: {nope\n\n', sse)).toEqual({ found: false });
    const big = `data: {"pad":"${"x".repeat(3000)}","usage":{"total_tokens":5}}\n\ndata: {"usage":{"total_tokens":6}}\n\n`;
    expect(read(big, sse, 100, 1024)).toEqual({ found: true, value: 6 });
    const bigLast = `data: {"usage":{"total_tokens":6}}\n\ndata: {"pad":"${"x".repeat(3000)}","usage":{"total_tokens":5}}\n\n`;
    expect(read(bigLast, sse, 100, 1024)).toEqual({ found: true, value: 6 });
  });
});
