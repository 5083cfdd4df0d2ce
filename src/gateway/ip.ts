/**
 * IP addresses for keys and allow/deny lists: parsing, canonical text, CIDR ranges and
 * prefix aggregation. Addresses are kept as bytes so that every spelling of one address
 * (`2001:DB8::1`, `2001:db8:0:0::1`, `::ffff:192.0.2.1` for an IPv4 client of a dual-stack
 * socket) becomes one key: a client must not get a fresh budget by respelling its address.
 */
export interface IpAddress {
  version: 4 | 6;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
}

/** A CIDR range such as `10.0.0.0/8` or `2001:db8::/32`. */
export interface IpRange {
  base: IpAddress;
  prefixBits: number;
}

const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;
const DOT = 46;
const DIGIT_0 = 48;

/**
 * Dotted-quad IPv4, four decimal parts of 0 to 255. Hand-rolled rather than a regex: it
 * runs for every request's peer address.
 */
function parseIpv4(text: string): Uint8Array | undefined {
  const bytes = new Uint8Array(4);
  let part = 0;
  let value = 0;
  let digits = 0;
  // The end of the text closes the last part as a "." would.
  for (let i = 0; i <= text.length; i++) {
    const code = i < text.length ? text.charCodeAt(i) : DOT;
    if (code === DOT) {
      if (digits === 0 || part === 4) return undefined;
      bytes[part++] = value;
      value = 0;
      digits = 0;
    } else if (code >= DIGIT_0 && code <= DIGIT_0 + 9) {
      // Leading zeros are refused: some stacks read "010" as octal 8, others as decimal 10.
      if (digits === 1 && value === 0) return undefined;
      value = value * 10 + (code - DIGIT_0);
      if (++digits > 3 || value > 255) return undefined;
    } else {
      return undefined;
    }
  }
  return part === 4 ? bytes : undefined;
}

function parseGroups(text: string): number[] | undefined {
  if (text === "") return [];
  const groups: number[] = [];
  const parts = text.split(":");
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (i === parts.length - 1 && part.includes(".")) {
      const v4 = parseIpv4(part);
      if (!v4) return undefined;
      groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    } else if (HEX_GROUP.test(part)) {
      groups.push(parseInt(part, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}

function parseIpv6(text: string): Uint8Array | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = parseGroups(halves[0]!);
  const tail = halves.length === 2 ? parseGroups(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...new Array<number>(missing).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    bytes[i * 2] = group >> 8;
    bytes[i * 2 + 1] = group & 0xff;
  });
  return bytes;
}

const isV4Mapped = (bytes: Uint8Array) => bytes.slice(0, 10).every((byte) => byte === 0) && bytes[10] === 0xff && bytes[11] === 0xff;

/**
 * Parses an IPv4 or IPv6 address (brackets and a `%zone` are dropped). IPv4-mapped IPv6
 * (`::ffff:a.b.c.d`) becomes the IPv4 address. Returns undefined for anything else.
 *
 * @example formatIp(parseIp("::ffff:192.0.2.1")!) // "192.0.2.1"
 */
export function parseIp(input: string): IpAddress | undefined {
  let text = input.trim();
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  if (text.length === 0 || text.length > 45) return undefined;
  if (!text.includes(":")) {
    const v4 = parseIpv4(text);
    return v4 ? { version: 4, bytes: v4 } : undefined;
  }
  const v6 = parseIpv6(text);
  if (!v6) return undefined;
  return isV4Mapped(v6) ? { version: 4, bytes: v6.slice(12) } : { version: 6, bytes: v6 };
}

/** Canonical text (RFC 5952 for IPv6: lower case, the longest run of zero groups as `::`). */
export function formatIp(address: IpAddress): string {
  const { bytes } = address;
  if (address.version === 4) return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  const groups = Array.from({ length: 8 }, (_, i) => (bytes[i * 2]! << 8) | bytes[i * 2 + 1]!);
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let end = i;
    while (end < 8 && groups[end] === 0) end++;
    if (end - i > bestLength) [bestStart, bestLength] = [i, end - i];
    i = end;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/** The address with every bit after `prefixBits` cleared. */
export function maskIp(address: IpAddress, prefixBits: number): IpAddress {
  const bytes = new Uint8Array(address.bytes);
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, prefixBits - i * 8));
    bytes[i] = bytes[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  return { version: address.version, bytes };
}

/**
 * Parses `10.0.0.0/8`, `2001:db8::/32` or a bare address (a range of one). Returns an error
 * sentence instead of throwing, so the config validator can name the field.
 */
export function parseIpRange(text: string): IpRange | string {
  const slash = text.indexOf("/");
  const address = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!address) return `must be an IPv4 or IPv6 address or CIDR range like "10.0.0.0/8", got ${JSON.stringify(text)}`;
  const maxBits = address.version === 4 ? 32 : 128;
  if (slash < 0) return { base: address, prefixBits: maxBits };
  const bitsText = text.slice(slash + 1);
  const bits = Number(bitsText);
  if (!/^\d{1,3}$/.test(bitsText) || bits > maxBits) return `has a prefix length outside 0 to ${maxBits}, got ${JSON.stringify(text)}`;
  return { base: maskIp(address, bits), prefixBits: bits };
}

/** Whether `address` lies in `range` (an IPv4 range never holds an IPv6 address, and back). */
export function rangeContains(range: IpRange, address: IpAddress): boolean {
  if (range.base.version !== address.version) return false;
  const masked = maskIp(address, range.prefixBits);
  return masked.bytes.every((byte, i) => byte === range.base.bytes[i]);
}

export const anyRangeContains = (ranges: readonly IpRange[], address: IpAddress) => ranges.some((range) => rangeContains(range, address));

/** `203.0.113.7:5555` and `[2001:db8::1]:5555`: an address with the port a proxy may write (RFC 7239 allows it). */
const WITH_PORT = /^(?:\[([^\]]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):(\d{1,5})$/;

/** One X-Forwarded-For hop: an address, with or without a port (the port is not part of the client). */
function parseHop(text: string): IpAddress | undefined {
  const withPort = WITH_PORT.exec(text);
  if (withPort && Number(withPort[3]) <= 65535) return parseIp(withPort[1] ?? withPort[2]!);
  return parseIp(text);
}

/**
 * The client's address behind proxies. `peer` is who connected to us (the socket, or
 * CF-Connecting-IP on Cloudflare). Only when the peer is one of `trustedProxies` is
 * X-Forwarded-For read, right to left, skipping trusted hops: everything left of the first
 * untrusted hop was written by the client and is ignored. A hop may carry a port
 * (`203.0.113.7:5555`, `[2001:db8::1]:5555`): the address is read. A malformed hop in the
 * trusted part yields undefined (no key) rather than a guess.
 */
export function resolveClientIp(peer: string | undefined, forwardedFor: string | null, trustedProxies: readonly IpRange[]): IpAddress | undefined {
  const peerAddress = peer === undefined ? undefined : parseIp(peer);
  if (!peerAddress || trustedProxies.length === 0 || !anyRangeContains(trustedProxies, peerAddress)) return peerAddress;
  const hops = (forwardedFor ?? "").split(",").map((hop) => hop.trim()).filter((hop) => hop !== "");
  let client = peerAddress;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseHop(hops[i]!);
    if (!hop) return undefined;
    client = hop;
    if (!anyRangeContains(trustedProxies, hop)) break;
  }
  return client;
}

/** What `ipKey` reads an address from: the text, or a request that carries it (Express's `req.ip`, else the socket's peer). */
export type IpKeySource = string | null | undefined | { ip?: string; socket?: { remoteAddress?: string } };

/**
 * A rate-limit key from a client's address, as a gateway route's `ip/N` key makes it: every
 * spelling of one address is one key, and an IPv6 address is counted by its /`ipv6Subnet`
 * (default 56, as express-rate-limit v8 does: one customer's /56 is one budget, not 2^72 of
 * them). IPv4 addresses are whole. `ipv6Subnet: false` (or 128) keeps IPv6 addresses whole.
 * Undefined when there is no address (the middleware then answers 400, never a shared key).
 *
 * @example key: (req) => ipKey(req) // "2001:db8:0:100::/56", "203.0.113.7"
 * @example key: (c) => ipKey(c.req.header("cf-connecting-ip"), { ipv6Subnet: 64 })
 */
export function ipKey(source: IpKeySource, options: { ipv6Subnet?: number | false } = {}): string | undefined {
  const subnet = options.ipv6Subnet ?? 56;
  if (subnet !== false && (!Number.isInteger(subnet) || subnet < 1 || subnet > 128)) throw new TypeError(`ipKey: ipv6Subnet must be an integer from 1 to 128 or false, got ${String(subnet)}`);
  const text = typeof source === "string" ? source : (source?.ip ?? source?.socket?.remoteAddress);
  const address = text ? parseIp(text) : undefined;
  return address ? prefixKey(address, subnet === false ? 128 : subnet) : undefined;
}

/**
 * The key of an address counted by its IPv6 prefix (a route's `ip/56`, ipKey): `2001:db8:0:100::/56`;
 * an IPv4 address, or a prefix of 128, is the address itself.
 */
export function prefixKey(address: IpAddress, ipv6PrefixBits: number): string {
  if (address.version === 4 || ipv6PrefixBits >= 128) return formatIp(address);
  return `${formatIp(maskIp(address, ipv6PrefixBits))}/${ipv6PrefixBits}`;
}
