/**
 * The last bytes of a command's output: a test log is read from its end (the summary, the
 * failures), so when it is too long its start is dropped.
 *
 * @module
 */

/**
 * Keeps at most `cap` bytes, the most recent.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { OutputTail } from "./output_tail.ts";
 * const tail = new OutputTail(4);
 * tail.push(new TextEncoder().encode("abcdef"));
 * assert.equal(tail.text(), "cdef");
 * assert.equal(tail.truncated, true);
 * ```
 */
export class OutputTail {
  #chunks: Uint8Array[] = [];
  #size = 0;
  #dropped = 0;

  constructor(readonly cap: number) {
    if (!Number.isInteger(cap) || cap < 0) throw new RangeError(`Invalid output cap ${cap}`);
  }

  /** Some bytes were dropped. */
  get truncated(): boolean {
    return this.#dropped > 0;
  }

  /** Bytes seen in all, kept or not. */
  get total(): number {
    return this.#size + this.#dropped;
  }

  push(chunk: Uint8Array): void {
    if (chunk.length >= this.cap) {
      this.#dropped += this.#size + chunk.length - this.cap;
      this.#chunks = this.cap > 0 ? [chunk.slice(chunk.length - this.cap)] : [];
      this.#size = this.cap;
      return;
    }
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    while (this.#size > this.cap) {
      const first = this.#chunks[0];
      const excess = this.#size - this.cap;
      if (first.length <= excess) {
        this.#chunks.shift();
        this.#size -= first.length;
        this.#dropped += first.length;
      } else {
        this.#chunks[0] = first.subarray(excess);
        this.#size -= excess;
        this.#dropped += excess;
      }
    }
  }

  /** The kept bytes as text (a character cut at the start becomes U+FFFD). */
  text(): string {
    const all = new Uint8Array(this.#size);
    let at = 0;
    for (const chunk of this.#chunks) {
      all.set(chunk, at);
      at += chunk.length;
    }
    return new TextDecoder().decode(all);
  }
}

/** Reads a stream to its end into `tail`. */
export async function drainInto(
  stream: ReadableStream<Uint8Array>,
  tail: OutputTail,
): Promise<void> {
  for await (const chunk of stream) tail.push(chunk);
}
