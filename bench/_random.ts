/**
 * A seeded pseudo-random source, so a soak's choices (faults, sizes, kill times) can be told by
 * its seed.
 *
 * @module
 */

/** Numbers drawn from one seed. */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  between(min: number, max: number): number;
  /** One of `items`. */
  pick<T>(items: readonly T[]): T;
}

/**
 * A mulberry32 generator: fast, 32-bit state, good enough to spread test choices.
 *
 * @example
 * ```ts
 * const random = seeded(42);
 * random.between(1, 6); // the same die roll for the same seed
 * ```
 */
export function seeded(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    between: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)],
  };
}

/** The base64 alphabet: its digits and `+/` cut a blob into short pieces. */
export const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/**
 * A spaceless text of `chars` characters drawn from `alphabet` (a base64 blob or a minified
 * bundle, as agents' tool outputs hold), the same for the same arguments.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.equal(blob(8, "ab").length, 8);
 * assert.equal(blob(8, "ab"), blob(8, "ab"));
 * ```
 */
export function blob(chars: number, alphabet = BASE64): string {
  const out = new Array<string>(chars);
  let x = 12_345;
  for (let i = 0; i < chars; i++) {
    x = (x * 1_103_515_245 + 12_345) & 0x7fffffff;
    out[i] = alphabet[x % alphabet.length];
  }
  return out.join("");
}
