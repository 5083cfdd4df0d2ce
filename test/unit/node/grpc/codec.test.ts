// src/node/grpc/decode.ts and encode.ts against proto-loader's own codec (protobufjs), which it replaces on
// every ShouldRateLimit: the same objects from the same bytes, the same bytes from the same answer.
import type * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { decodeRlsRequest } from "../../../../src/node/grpc/decode.js";
import { encodeRlsAnswer } from "../../../../src/node/grpc/encode.js";
import { loadRlsProtos } from "../../../../src/node/grpc/server.js";
import { MAX_DESCRIPTORS, parseRlsRequest } from "../../../../src/rls/request.js";
import type { RlsAnswer } from "../../../../src/rls/status.js";

const method = loadRlsProtos().RateLimitService.service.ShouldRateLimit as grpc.MethodDefinition<unknown, RlsAnswer>;
const referenceEncode = (request: unknown) => method.requestSerialize(request);
const referenceDecode = (bytes: Buffer) => method.requestDeserialize(bytes);
const referenceAnswer = (answer: RlsAnswer) => method.responseSerialize(answer);

/** A deterministic generator: a failing case can be run again. */
function generator(seed: number) {
  let state = seed;
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  const int = (max: number) => Math.floor(next() * (max + 1));
  const pick = <T,>(items: readonly T[]): T => items[int(items.length - 1)]!;
  const text = () => pick(["", "a", "remote_address", "10.1.2.3", "ü-ñ-✓", "x".repeat(200), "generic_key", "path=/v1/é"]);
  return { next, int, pick, text };
}

function randomRequest(seed: number): Record<string, unknown> {
  const g = generator(seed);
  const request: Record<string, unknown> = {};
  if (g.next() < 0.9) request.domain = g.text();
  if (g.next() < 0.3) request.hits_addend = g.pick([0, 1, 5, 127, 128, 300, 1e9, 4_294_967_295]);
  if (g.next() < 0.95) {
    request.descriptors = Array.from({ length: g.int(4) }, () => {
      const descriptor: Record<string, unknown> = {};
      if (g.next() < 0.95) descriptor.entries = Array.from({ length: g.int(3) }, () => {
        const entry: Record<string, unknown> = {};
        if (g.next() < 0.9) entry.key = g.text();
        if (g.next() < 0.8) entry.value = g.text();
        return entry;
      });
      if (g.next() < 0.2) descriptor.limit = { requests_per_unit: g.pick([0, 1, 100, 1e9]), unit: g.pick(["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR", "UNKNOWN", 9]) };
      if (g.next() < 0.2) descriptor.hits_addend = g.next() < 0.1 ? {} : { value: g.pick(["0", "1", "300", "9007199254740993", "18446744073709551615"]) };
      return descriptor;
    });
  }
  return request;
}

function randomAnswer(seed: number): RlsAnswer {
  const g = generator(seed);
  const code = () => g.pick(["OK", "OVER_LIMIT"] as const);
  const answer: RlsAnswer = {
    overall_code: code(),
    statuses: Array.from({ length: g.int(4) }, () => {
      const status: RlsAnswer["statuses"][number] = { code: code(), limit_remaining: g.pick([0, 1, 127, 128, 16_384, 4_294_967_295]) };
      if (g.next() < 0.8) {
        const limit = { name: g.text(), requests_per_unit: g.pick([0, 1, 1000, 1e9]), unit: g.int(7) };
        status.current_limit = g.next() < 0.5 ? Object.freeze(limit) : limit;
      }
      if (g.next() < 0.8) status.duration_until_reset = { seconds: g.pick([0, 1, 59, 3600, 31_536_000, 2 ** 40]), nanos: g.pick([0, 0, 500]) };
      return status;
    }),
  };
  if (g.next() < 0.3) answer.response_headers_to_add = Array.from({ length: g.int(3) }, () => ({ key: g.pick(["ratelimit-policy", "x-ratelimit-limit", "retry-after"]), value: g.text() }));
  return answer;
}

describe("ShouldRateLimit's codec (src/node/grpc/decode.ts, encode.ts)", () => {
  it("decodes 2,000 generated requests as proto-loader does", () => {
    for (let seed = 1; seed <= 2000; seed++) {
      const bytes = referenceEncode(randomRequest(seed));
      expect(decodeRlsRequest(bytes), `seed ${seed}`).toEqual(referenceDecode(bytes));
    }
  });

  it("skips fields it does not read, of every wire type, at every level", () => {
    const request = { domain: "d", descriptors: [{ entries: [{ key: "k", value: "v" }], limit: { requests_per_unit: 5, unit: "MINUTE" }, hits_addend: { value: "2" } }], hits_addend: 3 };
    const bytes = referenceEncode(request);
    // Field 15 as a varint (wire type 0), a fixed64 (1), bytes (2) and a fixed32 (5).
    const unknown = Buffer.from([0x78, 0x96, 0x01, 0x79, 1, 2, 3, 4, 5, 6, 7, 8, 0x7a, 0x02, 0xff, 0xfe, 0x7d, 1, 2, 3, 4]);
    const withUnknown = Buffer.concat([unknown, bytes, unknown]);
    expect(decodeRlsRequest(withUnknown)).toEqual(referenceDecode(withUnknown));
    expect(decodeRlsRequest(withUnknown)).toEqual(request);
  });

  it("decodes requests of up to MAX_DESCRIPTORS descriptors as proto-loader does", () => {
    expect(MAX_DESCRIPTORS).toBe(64);
    for (let seed = 1; seed <= 20; seed++) {
      const descriptors = Array.from({ length: MAX_DESCRIPTORS - (seed % 2) }, (_, i) => ({ ...(randomRequest(seed * 100 + i).descriptors as object[] | undefined)?.[0] }));
      const bytes = referenceEncode({ domain: "d", descriptors, hits_addend: seed });
      expect(decodeRlsRequest(bytes), `seed ${seed}`).toEqual(referenceDecode(bytes));
    }
  });

  // One request of 104,000 descriptors (1 MiB) held the event loop for as long as building them
  // all took, to be refused for its count.
  it("stops reading descriptors at the cap: the rest are counted, not read, and the refusal is the one proto-loader's objects get", () => {
    const descriptor = { entries: [{ key: "user", value: "u-1" }] };
    // The bytes of one descriptor, 104,000 times (a message's fields may come in any order: domain and hits_addend last).
    const one = referenceEncode({ descriptors: [descriptor] });
    const bytes = Buffer.concat([...Array.from({ length: 104_000 }, () => one), referenceEncode({ domain: "d", hits_addend: 2 })]);
    const ours = decodeRlsRequest(bytes);
    expect(ours.descriptors).toHaveLength(MAX_DESCRIPTORS);
    expect(ours.descriptors).toEqual(Array.from({ length: MAX_DESCRIPTORS }, () => descriptor));
    expect(ours).toMatchObject({ domain: "d", hits_addend: 2, descriptorCount: 104_000 });
    const refusal = (wire: Parameters<typeof parseRlsRequest>[0]) => {
      try {
        parseRlsRequest(wire);
      } catch (error) {
        return (error as Error).message;
      }
      return "accepted";
    };
    expect(refusal(ours)).toBe("descriptors: must hold at most 64 descriptors, got 104000");
    expect(refusal(ours)).toBe(refusal(referenceDecode(bytes) as never));
    // The 65th descriptor is not read at all: a field of wire type 7 inside it (field 15), which any reader refuses, passes unseen.
    const sixtyFour = referenceEncode({ domain: "d", descriptors: Array.from({ length: MAX_DESCRIPTORS }, () => descriptor) });
    const unreadable = Buffer.concat([sixtyFour, Buffer.from([0x12, 0x02, 0x7f, 0x00])]);
    expect(() => referenceDecode(unreadable)).toThrow(/wire type 7/);
    expect(refusal(decodeRlsRequest(unreadable))).toBe("descriptors: must hold at most 64 descriptors, got 65");
    // Its length is still checked: one past the end of the bytes is refused as before.
    expect(() => decodeRlsRequest(Buffer.concat([sixtyFour, Buffer.from([0x12, 0x05, 0x0a])]))).toThrow("index out of range");
  });

  it("refuses truncated and malformed bytes: whatever proto-loader refuses, and text cut short, which it clamps", () => {
    const outcome = (decode: (bytes: Buffer) => unknown, bytes: Buffer) => {
      try {
        return decode(bytes);
      } catch {
        return "refused";
      }
    };
    for (let seed = 1; seed <= 50; seed++) {
      const bytes = referenceEncode(randomRequest(seed));
      for (let cut = 1; cut < bytes.length; cut++) {
        const truncated = bytes.subarray(0, cut);
        const reference = outcome(referenceDecode, truncated);
        const ours = outcome(decodeRlsRequest, truncated);
        // Cut between two fields, both read the fields before it; anywhere else, ours refuses.
        if (ours !== "refused" || reference === "refused") expect(ours, `seed ${seed}, cut at ${cut} of ${bytes.length}`).toEqual(reference);
      }
    }
    // `domain` says 14 bytes and has 2: protobufjs answers the 2, we refuse the request.
    const cutText = Buffer.from([0x0a, 0x0e, 0x72, 0x65]);
    expect(referenceDecode(cutText)).toEqual({ domain: "re" });
    expect(() => decodeRlsRequest(cutText)).toThrow("index out of range");
    // A descriptor whose length ends inside an entry; a varint that never ends.
    expect(() => decodeRlsRequest(Buffer.from([0x12, 0x03, 0x0a, 0x05, 0x0a, 0x01, 0x61]))).toThrow();
    expect(() => decodeRlsRequest(Buffer.from([0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))).toThrow();
  });

  it("encodes 2,000 generated answers to proto-loader's bytes", () => {
    const fallback = () => {
      throw new Error("an answer of plain fields went to the fallback");
    };
    for (let seed = 1; seed <= 2000; seed++) {
      const answer = randomAnswer(seed);
      // Twice: the second from current_limit encodings kept by identity.
      expect(encodeRlsAnswer(answer, fallback), `seed ${seed}`).toEqual(referenceAnswer(answer));
      expect(encodeRlsAnswer(answer, fallback), `seed ${seed}, again`).toEqual(referenceAnswer(answer));
    }
  });

  it("hands answers with other fields or values to the fallback, and a changed current_limit is encoded anew", () => {
    const used: RlsAnswer[] = [];
    const fallback = (answer: RlsAnswer) => {
      used.push(answer);
      return referenceAnswer(answer);
    };
    const withMetadata: RlsAnswer = { overall_code: "OK", statuses: [], dynamic_metadata: { fields: { domain: { stringValue: "d" } } } };
    const negative: RlsAnswer = { overall_code: "OK", statuses: [{ code: "OK", limit_remaining: -1 }] };
    const rawHeader = { overall_code: "OK", statuses: [], response_headers_to_add: [{ key: "k", value: "v", raw_value: Buffer.from("x") }] } as unknown as RlsAnswer;
    for (const answer of [withMetadata, negative, rawHeader]) expect(encodeRlsAnswer(answer, fallback)).toEqual(referenceAnswer(answer));
    expect(used).toEqual([withMetadata, negative, rawHeader]);

    const limit = { name: "per-minute", requests_per_unit: 10, unit: 2 };
    const answer: RlsAnswer = { overall_code: "OK", statuses: [{ code: "OK", current_limit: limit, limit_remaining: 9 }] };
    expect(encodeRlsAnswer(answer, fallback)).toEqual(referenceAnswer(answer));
    limit.requests_per_unit = 20;
    expect(encodeRlsAnswer(answer, fallback)).toEqual(referenceAnswer(answer));
  });
});
