// The byte classes, scan states and path frames of json-scan.ts's JsonPathScan, and its one helper.

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const isSpace = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
/** Bytes that end a number or a literal (true, false, null). */
export const endsBare = (byte: number) => isSpace(byte) || byte === 0x2c || byte === 0x5d || byte === 0x7d;

/** Where in the document the scan is. */
export const At = {
  /** A value comes next (the document's, a member's, an array item's). */
  Value: 0,
  /** After `{`: a key or `}`. */
  KeyOrEnd: 1,
  /** After `,` in an object: a key. */
  Key: 2,
  /** In a key's string. */
  InKey: 3,
  /** After a key: `:`. */
  Colon: 4,
  /** After a value: `,`, or the container's end. */
  After: 5,
  /** In a string value, or a number or literal. */
  InString: 6,
  InBare: 7,
  /** Skipping a container that is off the path (or capturing the one at its end). */
  Nested: 8,
  /** Found, or not JSON: nothing more is read. */
  Done: 9,
} as const;
export type At = (typeof At)[keyof typeof At];

/** A container on the path: its members are compared with the path segment at its depth. */
export interface Frame {
  array: boolean;
  /** The current item's index (arrays). */
  index: number;
  /** A member matching this frame's segment came already (`repeats` only). */
  seen: boolean;
}


/** One array of the pieces (the pieces themselves when there is one). */
export function concat(pieces: readonly Uint8Array[], length: number): Uint8Array {
  if (pieces.length === 1) return pieces[0]!;
  const whole = new Uint8Array(length);
  let at = 0;
  for (const piece of pieces) {
    whole.set(piece, at);
    at += piece.length;
  }
  return whole;
}
