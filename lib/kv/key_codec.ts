/**
 * Deno KV's keys as bytes, ordered as Deno KV orders them: the tuple encoding of denokv's
 * `proto/codec.rs` (ported from FoundationDB's tuple layer). A store that keeps keys as bytes
 * (PostgreSQL's `bytea`, compared byte by byte) lists them in the same order as a KV file:
 * `Uint8Array` < string < bigint < number < `false` < `true`, each part self-delimiting, so that
 * the keys under a prefix are the byte strings that start with the prefix's bytes.
 *
 * @module
 */

const BYTES = 0x01;
const STRING = 0x02;
const NEG_INT_START = 0x0b;
const INT_ZERO = 0x14;
const POS_INT_END = 0x1d;
const DOUBLE = 0x21;
const FALSE = 0x26;
const TRUE = 0x27;
const ESCAPE = 0xff;
/** Bytes of an integer held in its tag (longer ones carry their length). */
const MAX_INT_BYTES = 8;

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * The bytes of `key`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeKey, encodeKey } from "./key_codec.ts";
 * assert.deepEqual([...encodeKey(["hello"])], [0x02, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x00]);
 * assert.deepEqual(decodeKey(encodeKey(["s", 1n, 2.5, true])), ["s", 1n, 2.5, true]);
 * ```
 */
export function encodeKey(key: Deno.KvKey): Uint8Array {
  const out: number[] = [];
  for (const part of key) {
    if (typeof part === "string") {
      out.push(STRING);
      escapeInto(out, utf8.encode(part));
      out.push(0);
    } else if (part instanceof Uint8Array) {
      out.push(BYTES);
      escapeInto(out, part);
      out.push(0);
    } else if (typeof part === "bigint") {
      encodeBigint(out, part);
    } else if (typeof part === "number") {
      encodeDouble(out, part);
    } else if (typeof part === "boolean") {
      out.push(part ? TRUE : FALSE);
    } else {
      throw new TypeError(`Cannot encode a key part of type ${typeof part}`);
    }
  }
  return Uint8Array.from(out);
}

/**
 * The key `bytes` encode.
 *
 * @throws {TypeError} for bytes that are no key.
 */
export function decodeKey(bytes: Uint8Array): Deno.KvKey {
  const key: Deno.KvKeyPart[] = [];
  let at = 0;
  while (at < bytes.length) {
    const tag = bytes[at++];
    if (tag === STRING || tag === BYTES) {
      const [raw, next] = unescape(bytes, at);
      key.push(tag === STRING ? utf8Decoder.decode(raw) : raw);
      at = next;
    } else if (tag >= NEG_INT_START && tag <= POS_INT_END) {
      const [value, next] = decodeBigint(bytes, at, tag);
      key.push(value);
      at = next;
    } else if (tag === DOUBLE) {
      if (at + 8 > bytes.length) throw new TypeError("Cannot decode a key: a number is cut short");
      key.push(decodeDouble(bytes.subarray(at, at + 8)));
      at += 8;
    } else if (tag === FALSE || tag === TRUE) {
      key.push(tag === TRUE);
    } else {
      throw new TypeError(`Cannot decode a key: tag 0x${tag.toString(16)}`);
    }
  }
  return key;
}

/** `bytes` with each zero byte followed by the escape byte. */
function escapeInto(out: number[], bytes: Uint8Array): void {
  for (const byte of bytes) {
    out.push(byte);
    if (byte === 0) out.push(ESCAPE);
  }
}

/** The escaped bytes from `at` to their terminating zero, and where the next part starts. */
function unescape(bytes: Uint8Array, at: number): [Uint8Array, number] {
  const out: number[] = [];
  for (let i = at; i < bytes.length; i++) {
    if (bytes[i] !== 0) {
      out.push(bytes[i]);
    } else if (bytes[i + 1] === ESCAPE) {
      out.push(0);
      i++;
    } else {
      return [Uint8Array.from(out), i + 1];
    }
  }
  throw new TypeError("Cannot decode a key: a string or bytes part is not terminated");
}

/** `value`'s magnitude, big-endian, without leading zero bytes. */
function magnitude(value: bigint): number[] {
  const out: number[] = [];
  for (let v = value < 0n ? -value : value; v > 0n; v >>= 8n) out.unshift(Number(v & 0xffn));
  return out;
}

function encodeBigint(out: number[], value: bigint): void {
  if (value === 0n) {
    out.push(INT_ZERO);
    return;
  }
  const bytes = magnitude(value);
  const n = bytes.length;
  if (n > 255) throw new RangeError("Cannot encode a bigint key part of more than 255 bytes");
  if (value < 0n) {
    out.push(...(n <= MAX_INT_BYTES ? [INT_ZERO - n] : [NEG_INT_START, n ^ 0xff]));
    out.push(...bytes.map((byte) => byte ^ 0xff));
  } else {
    out.push(...(n <= MAX_INT_BYTES ? [INT_ZERO + n] : [POS_INT_END, n]));
    out.push(...bytes);
  }
}

function decodeBigint(bytes: Uint8Array, at: number, tag: number): [bigint, number] {
  let n: number;
  let negative: boolean;
  if (tag >= INT_ZERO && tag <= INT_ZERO + MAX_INT_BYTES) {
    [n, negative] = [tag - INT_ZERO, false];
  } else if (tag >= INT_ZERO - MAX_INT_BYTES && tag < INT_ZERO) {
    [n, negative] = [INT_ZERO - tag, true];
  } else if (tag === NEG_INT_START || tag === POS_INT_END) {
    negative = tag === NEG_INT_START;
    n = negative ? bytes[at++] ^ 0xff : bytes[at++];
  } else {
    throw new TypeError(`Cannot decode a key: integer tag 0x${tag.toString(16)}`);
  }
  if (at + n > bytes.length) throw new TypeError("Cannot decode a key: an integer is cut short");
  let value = 0n;
  for (let i = 0; i < n; i++) {
    value = (value << 8n) | BigInt(negative ? bytes[at + i] ^ 0xff : bytes[at + i]);
  }
  return [negative ? -value : value, at + n];
}

const SIGN_BIT = 0x8000000000000000n;
const ALL_BITS = 0xffffffffffffffffn;

function encodeDouble(out: number[], value: number): void {
  const view = new DataView(new ArrayBuffer(8));
  // NaN as one canonical NaN, as denokv writes it.
  view.setFloat64(0, Number.isNaN(value) ? NaN : value);
  let bits = view.getBigUint64(0);
  bits = bits & SIGN_BIT ? bits ^ ALL_BITS : bits ^ SIGN_BIT;
  view.setBigUint64(0, bits);
  out.push(DOUBLE, ...new Uint8Array(view.buffer));
}

function decodeDouble(bytes: Uint8Array): number {
  // A copy: `bytes` may be a view into a larger buffer (a Node Buffer's `slice` is a view too).
  const view = new DataView(new Uint8Array(bytes).buffer);
  let bits = view.getBigUint64(0);
  bits = bits & SIGN_BIT ? bits ^ SIGN_BIT : bits ^ ALL_BITS;
  view.setBigUint64(0, bits);
  return view.getFloat64(0);
}
