/**
 * A running digest of a token sequence: the soak's engine remembers each prompt by its digest,
 * and the checks at the end recompute the digest of a recorded chain turn by turn, in one pass.
 *
 * @module
 */

/**
 * The digest of the tokens seen so far: two 32-bit FNV-1a style lanes and the length. Equal
 * sequences give equal digests; unequal ones differ but with negligible odds.
 *
 * @example
 * ```ts
 * const hash = new TokenHash().update([1, 2]);
 * hash.clone().update([3]).digest() === new TokenHash().update([1, 2, 3]).digest(); // true
 * ```
 */
export class TokenHash {
  #a = 0x811c9dc5;
  #b = 0x9747b28c;
  #length = 0;

  /** Adds `tokens` to the sequence. */
  update(tokens: ArrayLike<number>): this {
    let a = this.#a;
    let b = this.#b;
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i];
      a = Math.imul(a ^ token, 0x01000193);
      b = Math.imul(b ^ token, 0x5bd1e995);
      b ^= b >>> 13;
    }
    this.#a = a;
    this.#b = b;
    this.#length += tokens.length;
    return this;
  }

  /** Tokens seen so far. */
  get length(): number {
    return this.#length;
  }

  /** A copy that can go on without changing this one. */
  clone(): TokenHash {
    const copy = new TokenHash();
    copy.#a = this.#a;
    copy.#b = this.#b;
    copy.#length = this.#length;
    return copy;
  }

  /** The digest of the sequence so far: `<length>:<hex>`. */
  digest(): string {
    const hex = (n: number) => (n >>> 0).toString(16).padStart(8, "0");
    return `${this.#length}:${hex(this.#a)}${hex(this.#b)}`;
  }
}
