/**
 * Prompt token ids kept as the comma-separated ASCII digits of the engine's JSON body, so that
 * sending a long history costs a write of bytes kept (`SglangClient` sends them as they are), and
 * extending it costs work proportional to the new tokens (T4), instead of formatting every id
 * again on every turn.
 *
 * @module
 */

/**
 * The growable buffer several {@linkcode PromptIds} share; `used` marks its written end. It is
 * shared memory, so the engine HTTP worker reads a prompt's digits where they are, without a copy:
 * what a `PromptIds` covers is never written again (an extension writes past it, or copies), so
 * another thread may read it while this one extends the store.
 */
interface Store {
  bytes: Uint8Array;
  used: number;
}

/** A new store's bytes, in shared memory. */
function storeBytes(length: number): Uint8Array {
  return new Uint8Array(new SharedArrayBuffer(length));
}

const COMMA = 44;
const ZERO = 48;

/**
 * An immutable sequence of token ids, serialized once.
 *
 * Extensions share one buffer: {@linkcode PromptIds.concat} writes in place when nothing was
 * appended after this sequence yet, and copies otherwise, so two turns extending the same
 * history never see each other's tokens.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PromptIds } from "./prompt_ids.ts";
 * const history = PromptIds.from([1, 22]);
 * const prompt = history.concat([333]);
 * assert.equal(new TextDecoder().decode(prompt.ascii()), "1,22,333");
 * assert.equal(history.length, 2);
 * ```
 */
export class PromptIds {
  private constructor(
    private readonly store: Store,
    private readonly size: number,
    /** Number of token ids. */
    readonly length: number,
  ) {}

  /** The sequence of `ids`; `ascii`, when given, is their digits already written (see `concat`). */
  static from(ids: ArrayLike<number>, ascii?: Uint8Array): PromptIds {
    return new PromptIds({ bytes: storeBytes(0), used: 0 }, 0, 0).concat(ids, ascii);
  }

  /**
   * This sequence followed by `ids`. `ascii`, when given, must be exactly their digits as
   * {@linkcode PromptIds.ascii} writes them (a tokenizer worker writes them off the event loop):
   * they are copied, not written again.
   */
  concat(ids: ArrayLike<number>, ascii?: Uint8Array): PromptIds {
    if (ids.length === 0) return this;
    let store = this.store;
    // Exactly what the ids take: a capacity from a bound (11 bytes an id) would hold some 80% more
    // than the digits of a prompt read back from the store, for as long as it is cached.
    const needed = this.size + 1 + (ascii ? ascii.length : asciiLength(ids));
    if (store.used !== this.size || store.bytes.length < needed) {
      const bytes = storeBytes(capacityFor(needed));
      bytes.set(store.bytes.subarray(0, this.size));
      store = { bytes, used: this.size };
    }
    let at = this.size;
    const out = store.bytes;
    if (ascii) {
      if (at > 0) out[at++] = COMMA;
      out.set(ascii, at);
      at += ascii.length;
    } else {
      for (let i = 0; i < ids.length; i++) {
        if (at > 0) out[at++] = COMMA;
        at = writeDigits(out, at, ids[i]);
      }
    }
    store.used = at;
    return new PromptIds(store, at, this.length + ids.length);
  }

  /** Bytes of the buffer holding its digits (shared with the sequences it extends). */
  get bytes(): number {
    return this.store.bytes.byteLength;
  }

  /** The ids as ASCII, e.g. `1,22,333`: a view, valid as long as this object is. */
  ascii(): Uint8Array {
    return this.store.bytes.subarray(0, this.size);
  }

  /**
   * The last `count` ids as ASCII (a view, as {@linkcode PromptIds.ascii}): found by walking back
   * over their digits only, so its cost is the tail's, not the sequence's.
   */
  tail(count: number): Uint8Array {
    if (count >= this.length) return this.ascii();
    if (count <= 0) return this.store.bytes.subarray(this.size, this.size);
    const bytes = this.store.bytes;
    let at = this.size;
    for (let seen = 0; at > 0; at--) {
      if (bytes[at - 1] === COMMA && ++seen === count) break;
    }
    return bytes.subarray(at, this.size);
  }

  /** The last id, read from its digits; `undefined` when there is none. */
  last(): number | undefined {
    if (this.length === 0) return undefined;
    const bytes = this.store.bytes;
    let at = this.size;
    let value = 0;
    for (let scale = 1; at > 0 && bytes[at - 1] !== COMMA; scale *= 10) {
      value += (bytes[--at] - ZERO) * scale;
    }
    return value;
  }

  /** The ids as numbers. */
  toArray(): number[] {
    return this.length === 0 ? [] : new TextDecoder().decode(this.ascii()).split(",").map(Number);
  }
}

/**
 * Bytes a new store gets for `needed`: half as much again, so a sequence extended in place is
 * copied O(log n) times (each copy of what it holds then), and a copy (a retry, a resume, a
 * branch) starts from what it needs, never from the buffer it leaves: sized from the old
 * buffer, every resume of one turn doubled it.
 */
export function capacityFor(needed: number): number {
  return Math.max(MIN_STORE_BYTES, needed + (needed >>> 1));
}

const MIN_STORE_BYTES = 4096;

/** Bytes of `ids` written as {@linkcode PromptIds.ascii} writes them (digits and commas). */
function asciiLength(ids: ArrayLike<number>): number {
  let bytes = ids.length - 1;
  for (let i = 0; i < ids.length; i++) {
    const value = ids[i];
    if (value >>> 0 !== value) throw new RangeError(`Invalid token id: ${value}`);
    bytes += digitCount(value);
  }
  return bytes;
}

/** Decimal digits of `value`, a token id: counted by multiplying, cheaper than dividing. */
function digitCount(value: number): number {
  let digits = 1;
  for (let bound = 10; bound <= value; bound *= 10) digits++;
  return digits;
}

function writeDigits(out: Uint8Array, at: number, value: number): number {
  // An integer in [0, 2³²) is its own unsigned 32-bit value; nothing else is.
  if (value >>> 0 !== value) throw new RangeError(`Invalid token id: ${value}`);
  // Digits counted by multiplying, then one division per digit: about 40% faster than dividing
  // for both (a first prompt writes some 12k ids). The quotient truncated by `>>> 0` rather than
  // `Math.floor`: 16 against 26 ns an id here.
  const digits = digitCount(value);
  let v = value;
  for (let i = at + digits - 1; i >= at; i--) {
    const next = (v / 10) >>> 0;
    out[i] = ZERO + (v - next * 10);
    v = next;
  }
  return at + digits;
}
