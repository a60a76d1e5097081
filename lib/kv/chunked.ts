/**
 * A turn's tokens as a binary blob cut into chunks below KV's 64 KiB value limit.
 *
 * Layout (little-endian): three u32 lengths (delta, output, closing), then the delta, output
 * and closing token ids as u32, padding to 8 bytes, then one f64 logprob per output token.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { KV_MAX_VALUE_BYTES } from "./keys.ts";

/** Bytes per chunk, leaving room for the value's serialization header. */
export const CHUNK_BYTES = KV_MAX_VALUE_BYTES - 1024;

/** The tokens one turn added to its chain. `output` and `logprobs` are equally long. */
export interface TurnTokens {
  /** Tokens rendered from the new messages (the whole prompt on a chain's first turn). */
  readonly delta: ArrayLike<number>;
  /** Tokens the engine sampled. */
  readonly output: ArrayLike<number>;
  /** The engine's logprob of each output token. */
  readonly logprobs: ArrayLike<number>;
  /** Tokens appended to close the turn when the output did not end with end-of-turn. */
  readonly closing: ArrayLike<number>;
}

/**
 * Encodes a turn's tokens and cuts them into chunks.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeTurnTokens, encodeTurnTokens } from "./chunked.ts";
 * const chunks = encodeTurnTokens({ delta: [1, 2], output: [3], logprobs: [-0.5], closing: [] });
 * assert.deepEqual(decodeTurnTokens(chunks).output, new Uint32Array([3]));
 * ```
 */
export function encodeTurnTokens(tokens: TurnTokens): Uint8Array[] {
  if (tokens.output.length !== tokens.logprobs.length) {
    throw new RangeError(
      `Cannot encode turn tokens: ${tokens.output.length} output tokens but ${tokens.logprobs.length} logprobs`,
    );
  }
  const ids = tokens.delta.length + tokens.output.length + tokens.closing.length;
  const idsEnd = 12 + ids * 4;
  const lpStart = Math.ceil(idsEnd / 8) * 8;
  const buffer = new ArrayBuffer(lpStart + tokens.logprobs.length * 8);
  const view = new DataView(buffer);
  view.setUint32(0, tokens.delta.length, true);
  view.setUint32(4, tokens.output.length, true);
  view.setUint32(8, tokens.closing.length, true);
  const u32 = new Uint32Array(buffer, 12, ids);
  u32.set(tokens.delta, 0);
  u32.set(tokens.output, tokens.delta.length);
  u32.set(tokens.closing, tokens.delta.length + tokens.output.length);
  new Float64Array(buffer, lpStart, tokens.logprobs.length).set(tokens.logprobs);
  const bytes = new Uint8Array(buffer);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += CHUNK_BYTES) {
    chunks.push(bytes.slice(at, at + CHUNK_BYTES));
  }
  return chunks;
}

/** Decoded turn tokens, as typed arrays. */
export interface DecodedTurnTokens {
  readonly delta: Uint32Array;
  readonly output: Uint32Array;
  readonly logprobs: Float64Array;
  readonly closing: Uint32Array;
}

/** Joins and decodes the chunks of {@linkcode encodeTurnTokens}. */
export function decodeTurnTokens(chunks: readonly Uint8Array[]): DecodedTurnTokens {
  // A fresh, aligned copy: typed-array views below need offsets from 0.
  const bytes = new Uint8Array(Buffer.concat(chunks));
  const total = bytes.length;
  if (total < 12) {
    throw new RangeError("Cannot decode turn tokens: blob is shorter than its header");
  }
  const view = new DataView(bytes.buffer);
  const deltaLen = view.getUint32(0, true);
  const outputLen = view.getUint32(4, true);
  const closingLen = view.getUint32(8, true);
  const ids = deltaLen + outputLen + closingLen;
  const lpStart = Math.ceil((12 + ids * 4) / 8) * 8;
  if (total !== lpStart + outputLen * 8) {
    throw new RangeError(
      `Cannot decode turn tokens: blob holds ${total} bytes, its header says ${
        lpStart + outputLen * 8
      }`,
    );
  }
  const u32 = new Uint32Array(bytes.buffer, 12, ids);
  return {
    delta: u32.slice(0, deltaLen),
    output: u32.slice(deltaLen, deltaLen + outputLen),
    closing: u32.slice(deltaLen + outputLen),
    logprobs: new Float64Array(bytes.buffer, lpStart, outputLen).slice(),
  };
}
