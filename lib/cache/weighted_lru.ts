/**
 * A map that keeps the most recently used entries up to a total weight: chains' token arrays,
 * long text sections' tokens, the stable JSON of a request's settings. Each use picks what an
 * entry weighs (tokens, characters).
 *
 * @module
 */

interface Entry<V> {
  readonly value: V;
  readonly weight: number;
}

/**
 * Entries of at most `capacity` total weight, the least recently used dropped first. An entry
 * heavier than the whole capacity is not kept.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { WeightedLru } from "./weighted_lru.ts";
 * const cache = new WeightedLru<string, string>(6, (key, value) => key.length + value.length);
 * cache.set("a", "1");
 * cache.set("b", "2");
 * assert.equal(cache.get("a"), "1"); // "a" is now the most recently used
 * cache.set("c", "3"); // 6 > 6? no: all three fit
 * cache.set("d", "4"); // 8: "b", the least recently used, goes
 * assert.equal(cache.get("b"), undefined);
 * assert.equal(cache.held, 6);
 * ```
 */
export class WeightedLru<K, V> {
  readonly #entries = new Map<K, Entry<V>>();
  #held = 0;

  constructor(
    readonly capacity: number,
    private readonly weigh: (key: K, value: V) => number,
  ) {}

  /** The value under `key`, now the most recently used; `undefined` when not held. */
  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Holds `value` under `key`, dropping the least recently used entries past the capacity. */
  set(key: K, value: V): void {
    this.delete(key);
    const weight = this.weigh(key, value);
    if (weight > this.capacity) return;
    this.#entries.set(key, { value, weight });
    this.#held += weight;
    for (const [old, entry] of this.#entries) {
      if (this.#held <= this.capacity) break;
      this.#entries.delete(old);
      this.#held -= entry.weight;
    }
  }

  /** Forgets `key`. */
  delete(key: K): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#held -= entry.weight;
  }

  /** Total weight held. */
  get held(): number {
    return this.#held;
  }

  /** Entries held. */
  get size(): number {
    return this.#entries.size;
  }
}
