/**
 * Text of sampled tokens as they arrive. A token of a byte-level vocabulary can hold part of a
 * character, so a token's text alone may be a replacement character that the next token
 * completes; and some decoders treat a text's first token specially. So each step decodes a short
 * window, the tokens since the last text sent, and sends what the window adds to the text it
 * already had, once that does not end in a partial character (the detokenizer SGLang and
 * Hugging Face stream with).
 *
 * @module
 */

/** Decodes token ids pushed a few at a time into text pieces. */
export class DecodeStream {
  readonly #decode: (ids: ArrayLike<number>) => string;
  readonly #ids: number[] = [];
  /** Where the window starts: the tokens before it are sent and need no context. */
  #prefix = 0;
  /** Tokens whose text has been sent. */
  #read = 0;

  /** A stream over `decode` (the tokenizer's decode of a whole sequence). */
  constructor(decode: (ids: ArrayLike<number>) => string) {
    this.#decode = decode;
  }

  /**
   * The text `ids` settle: empty while they end inside a character.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { defaultTokenizerPath } from "../config/mod.ts";
   * import { DecodeStream } from "./decode_stream.ts";
   * import { loadTokenizer } from "./tokenizer.ts";
   * const tokenizer = await loadTokenizer(defaultTokenizerPath());
   * const stream = new DecodeStream((ids) => tokenizer.decode(ids));
   * const text = stream.push(tokenizer.encode("Hello")) + stream.push(tokenizer.encode(" world")) +
   *   stream.end();
   * assert.equal(text, "Hello world");
   * ```
   */
  push(ids: readonly number[]): string {
    for (const id of ids) this.#ids.push(id);
    const before = this.#decode(this.#ids.slice(this.#prefix, this.#read));
    const now = this.#decode(this.#ids.slice(this.#prefix));
    if (now.length <= before.length || now.endsWith("\uFFFD") || !now.startsWith(before)) return "";
    this.#prefix = this.#read;
    this.#read = this.#ids.length;
    return now.slice(before.length);
  }

  /** The text still held back (a partial character stays a replacement character). */
  end(): string {
    const before = this.#decode(this.#ids.slice(this.#prefix, this.#read));
    const now = this.#decode(this.#ids.slice(this.#prefix));
    this.#prefix = this.#read = this.#ids.length;
    return now.startsWith(before) ? now.slice(before.length) : "";
  }
}
