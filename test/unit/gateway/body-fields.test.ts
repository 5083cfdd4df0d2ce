import { describe, expect, it } from "vitest";
import { type BodyFields, BodyFieldsReader } from "../../../src/gateway/body-fields.js";
import { holdBody } from "../../../src/gateway/body-hold.js";
import { JsonPathScan } from "../../../src/gateway/json-scan.js";

// The request body's fields (src/gateway/body-fields.ts): read whole or not at all, a field
// named twice told apart, the same answer however the body is cut into chunks.
const encoder = new TextEncoder();
const PATHS = [["model"], ["max_tokens"], ["metadata", "user_id"], ["messages", "0", "role"]];

/** Reads `body` in chunks of `size` bytes (0: whole). */
function read(body: string, size = 0, limitBytes = 1 << 20, encoding?: string): BodyFields {
  const reader = new BodyFieldsReader({ paths: PATHS, limitBytes }, encoding);
  const bytes = encoder.encode(body);
  const step = size || bytes.length || 1;
  let wanted = true;
  for (let at = 0; at < bytes.length && wanted; at += step) wanted = reader.push(bytes.subarray(at, at + step));
  return reader.finish(wanted);
}
const view = (fields: BodyFields) => ({ bytes: fields.bytes, reason: fields.reason, fields: PATHS.map((path) => fields.field(path)) });

describe("request body fields", () => {
  it("reads each path's value, the same whole or byte by byte", () => {
    const body = ' {"messages":[{"role":"user","content":"a \\" } ] {"}],"model":"gpt-4o","metadata":{"user_id":"u-1","x":[1,{"user_id":2}]},"max_tokens":2000} ';
    const whole = view(read(body));
    expect(whole.reason).toBeUndefined();
    expect(whole.fields).toEqual([{ found: true, value: "gpt-4o" }, { found: true, value: 2000 }, { found: true, value: "u-1" }, { found: true, value: "user" }]);
    for (const size of [1, 2, 7]) expect(view(read(body, size))).toEqual(whole);
  });

  it("a field named twice is repeated, its parent named twice too; a field absent is not found", () => {
    for (const size of [0, 1]) {
      const fields = read('{"model":"a","metadata":{"user_id":"u"},"metadata":{},"model":"b"}', size);
      expect(fields.field(["model"])).toEqual({ found: false, repeated: true });
      expect(fields.field(["metadata", "user_id"])).toEqual({ found: false, repeated: true });
      expect(fields.field(["max_tokens"])).toEqual({ found: false });
    }
    // Same names in other objects are other members.
    expect(read('{"a":{"model":"x"},"model":"y"}').field(["model"])).toEqual({ found: true, value: "y" });
  });

  it("a body with no fields: too long, not JSON, cut short, encoded, empty, broken off", () => {
    expect(read('{"model":"a"}', 4, 8).reason).toMatch(/longer than the 8 bytes the route reads/);
    expect(read("model=a").reason).toBe("the body is not JSON");
    expect(read('{"model":"a"} trailing').field(["model"])).toEqual({ found: true, value: "a" });
    expect(read('{"model":"a",').reason).toBe("the body is not JSON");
    expect(read('{"model":"a"}', 0, 1 << 20, "gzip").reason).toBe("the body is encoded (gzip)");
    expect(read("").reason).toBe("the request has no body");
    const reader = new BodyFieldsReader({ paths: PATHS, limitBytes: 100 });
    reader.push(encoder.encode('{"model":"a"}'));
    expect(reader.finish(false).reason).toBe("the body broke off");
  });

  it("JsonPathScan without repeats still stops at the first occurrence (answers' usage)", () => {
    const scan = new JsonPathScan(["usage", "total_tokens"]);
    scan.push(encoder.encode('{"usage":{"total_tokens":5},"usage":{"total_tokens":9}}'));
    expect(scan.done).toBe(true);
    expect(scan.finish()).toEqual({ found: true, value: 5 });
  });

  it("holdBody gives the origin every byte, the held prefix and the rest, in order", async () => {
    const pieces = ['{"model":', '"m","messages":"', "x".repeat(5000), '"}'].map((piece) => encoder.encode(piece));
    const source = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces) controller.enqueue(piece);
        controller.close();
      },
    });
    const { fields, body } = await holdBody(source, { paths: [["model"]], limitBytes: 1024 }, null);
    expect(fields.reason).toMatch(/longer than the 1024 bytes/);
    const text = await new Response(body).text();
    expect(text).toBe(pieces.map((piece) => new TextDecoder().decode(piece)).join(""));
  });
});
