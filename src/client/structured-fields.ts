/**
 * Just enough of RFC 8941 structured fields to read rate-limit headers: a list (or a
 * dictionary) of bare items with parameters. Inner lists and byte sequences are skipped.
 * Anything malformed makes the whole field unreadable (undefined): a half-parsed
 * rate-limit header is worse than none.
 */

export type BareItem = number | string | boolean;

export interface Member {
  /** Dictionary key (`limit=10` → "limit"); undefined for a list item. */
  key?: string;
  value: BareItem;
  params: Map<string, BareItem>;
}

const KEY = /^[a-z*][a-z0-9_\-.*]*/;
const TOKEN = /^[A-Za-z*][A-Za-z0-9!#$%&'*+\-.^_`|~:/]*/;
const NUMBER = /^-?\d{1,15}(\.\d{1,3})?/;

export function parseMembers(field: string | null | undefined): Member[] | undefined {
  if (field === null || field === undefined) return undefined;
  const reader = { text: field.trim(), at: 0 };
  const members: Member[] = [];
  if (reader.text === "") return members;
  while (reader.at < reader.text.length) {
    const member = parseMember(reader);
    if (!member) return undefined;
    members.push(member);
    skipSpaces(reader);
    if (reader.at >= reader.text.length) break;
    if (reader.text[reader.at] !== ",") return undefined;
    reader.at++;
    skipSpaces(reader);
    if (reader.at >= reader.text.length) return undefined; // trailing comma
  }
  return members;
}

interface Reader {
  text: string;
  at: number;
}

function rest(reader: Reader): string {
  return reader.text.slice(reader.at);
}

function skipSpaces(reader: Reader): void {
  while (reader.text[reader.at] === " " || reader.text[reader.at] === "\t") reader.at++;
}

function parseMember(reader: Reader): Member | undefined {
  let key: string | undefined;
  const keyMatch = KEY.exec(rest(reader));
  if (keyMatch && reader.text[reader.at + keyMatch[0].length] === "=") {
    key = keyMatch[0];
    reader.at += keyMatch[0].length + 1;
  }
  const value = parseBareItem(reader);
  if (value === undefined) return undefined;
  const params = parseParams(reader);
  if (!params) return undefined;
  return key === undefined ? { value, params } : { key, value, params };
}

function parseParams(reader: Reader): Map<string, BareItem> | undefined {
  const params = new Map<string, BareItem>();
  while (reader.text[reader.at] === ";") {
    reader.at++;
    skipSpaces(reader);
    const keyMatch = KEY.exec(rest(reader));
    if (!keyMatch) return undefined;
    reader.at += keyMatch[0].length;
    let value: BareItem = true;
    if (reader.text[reader.at] === "=") {
      reader.at++;
      const parsed = parseBareItem(reader);
      if (parsed === undefined) return undefined;
      value = parsed;
    }
    params.set(keyMatch[0], value);
  }
  return params;
}

function parseBareItem(reader: Reader): BareItem | undefined {
  const char = reader.text[reader.at];
  if (char === '"') return parseString(reader);
  if (char === "?") {
    const flag = reader.text[reader.at + 1];
    if (flag !== "0" && flag !== "1") return undefined;
    reader.at += 2;
    return flag === "1";
  }
  const number = NUMBER.exec(rest(reader));
  if (number) {
    reader.at += number[0].length;
    return Number(number[0]);
  }
  const token = TOKEN.exec(rest(reader));
  if (token) {
    reader.at += token[0].length;
    return token[0];
  }
  return undefined;
}

function parseString(reader: Reader): string | undefined {
  let value = "";
  reader.at++;
  while (reader.at < reader.text.length) {
    const char = reader.text[reader.at++]!;
    if (char === "\\") {
      const escaped = reader.text[reader.at++];
      if (escaped !== '"' && escaped !== "\\") return undefined;
      value += escaped;
    } else if (char === '"') {
      return value;
    } else {
      value += char;
    }
  }
  return undefined;
}
