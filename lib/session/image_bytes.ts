/**
 * The bytes of the images a process has seen in turns, by digest: a later turn's engine call
 * sends every image of its prompt again (the engine's processor reads each image's pads against
 * its pixels), and the bytes of the history's images are taken from here rather than decoded
 * and hashed again from the request.
 *
 * @module
 */
import { type CacheStats, WeightedLru } from "../cache/mod.ts";

/** Bytes of base64 kept by default: some hundreds of screenshots. */
export const IMAGE_BYTES_CAPACITY = 64 * 1024 * 1024;

/**
 * Image bytes (base64) by digest, bounded by their bytes (a byte a base64 character).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ImageBytes } from "./image_bytes.ts";
 * const bytes = new ImageBytes(1024);
 * bytes.remember("d1", "iVBORw0KGgo=");
 * assert.equal(bytes.get("d1"), "iVBORw0KGgo=");
 * assert.equal(bytes.get("d2"), undefined);
 * ```
 */
export class ImageBytes {
  readonly #lru: WeightedLru<string, string>;

  constructor(capacityBytes = IMAGE_BYTES_CAPACITY) {
    this.#lru = new WeightedLru(capacityBytes, (digest, data) => digest.length + data.length);
  }

  remember(digest: string, data: string): void {
    if (this.#lru.get(digest) === undefined) this.#lru.set(digest, data);
  }

  get(digest: string): string | undefined {
    return this.#lru.get(digest);
  }

  /** What it holds (characters of base64, a byte each) and how it was used. */
  stats(): CacheStats {
    return this.#lru.stats();
  }
}
