import { spelled } from "./header-names.js";
import { HOP_BY_HOP, newFieldRecord } from "../../gateway/proxy.js";

// A message's fields between node:http's raw lists and the gateway's records and Headers:
// what the gateway and WebSocket edges read and write of every request and answer.

/** A Headers as node:http's flat [name, value, …] list, several Set-Cookie fields kept apart. */
export function flatFields(headers: Headers): string[] {
  const fields: string[] = [];
  headers.forEach((value, name) => {
    if (name !== "set-cookie") fields.push(spelled(name), value);
  });
  for (const cookie of headers.getSetCookie()) fields.push("set-cookie", cookie);
  return fields;
}

/**
 * A message's end-to-end fields from node:http's rawHeaders, in one pass: lower-case names,
 * repeats joined by ", ", without hop-by-hop fields and those its Connection field names
 * (rare beyond keep-alive and close), and without Host for a request (`request`). An answer
 * with several Set-Cookie lines gets undefined: one string cannot keep them apart.
 */
export function endToEndFields(raw: readonly string[], request: boolean): Record<string, string> | undefined {
  const fields = newFieldRecord();
  let connection: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    if (name === "connection") connection = connection === undefined ? value : `${connection}, ${value}`;
    if (HOP_BY_HOP.has(name) || (request && name === "host")) continue;
    const seen = fields[name];
    if (seen === undefined) fields[name] = value;
    else if (!request && name === "set-cookie") return undefined;
    else fields[name] = `${seen}, ${value}`;
  }
  if (connection) {
    for (const named of connection.split(",")) {
      const name = named.trim().toLowerCase();
      if (name in fields) delete fields[name];
    }
  }
  return fields;
}

/**
 * An origin's answer fields: its end-to-end fields as a record, read in one pass; when several
 * Set-Cookie lines come, a Headers of all its fields instead, which keeps them apart (answerHeaders
 * drops the hop-by-hop ones from it). Node's parser has already refused malformed names and values.
 */
export function originFields(raw: readonly string[]): Headers | Record<string, string> {
  return endToEndFields(raw, false) ?? headersFromRaw(raw);
}

function headersFromRaw(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i < raw.length; i += 2) {
    try {
      headers.append(raw[i]!, raw[i + 1]!);
    } catch {
      // A field the Headers class refuses (bad characters) is dropped, not fatal.
    }
  }
  return headers;
}
