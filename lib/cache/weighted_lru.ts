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
  readonly bytes: number;
}

/** What a cache holds and how it is used, for `/metrics`. */
export interface CacheStats {
  /** Weight held, in the cache's own unit (tokens, characters). */
  readonly held: number;
  /** Most weight it holds. */
  readonly capacity: number;
  /** Bytes of memory its entries take, estimated by the cache (see each one's `sizeOf`). */
  readonly bytes: number;
  /** Lookups that found an entry, and that did not, since it was made. */
  readonly hits: number;
  readonly misses: number;
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
  #bytes = 0;
  #hits = 0;
  #misses = 0;

  /**
   * `weigh` gives an entry's weight against `capacity`; `sizeOf`, its bytes of memory for the
   * stats (by default its weight: a weight in bytes).
   */
  constructor(
    readonly capacity: number,
    private readonly weigh: (key: K, value: V) => number,
    private readonly sizeOf: (key: K, value: V) => number = weigh,
  ) {}

  /** The value under `key`, now the most recently used; `undefined` when not held. */
  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) {
      this.#misses++;
      return undefined;
    }
    this.#hits++;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Holds `value` under `key`, dropping the least recently used entries past the capacity. */
  set(key: K, value: V): void {
    this.delete(key);
    const weight = this.weigh(key, value);
    if (weight > this.capacity) return;
    const bytes = this.sizeOf(key, value);
    this.#entries.set(key, { value, weight, bytes });
    this.#held += weight;
    this.#bytes += bytes;
    for (const [old, entry] of this.#entries) {
      if (this.#held <= this.capacity) break;
      this.#drop(old, entry);
    }
  }

  /** Forgets `key`. */
  delete(key: K): void {
    const entry = this.#entries.get(key);
    if (entry) this.#drop(key, entry);
  }

  #drop(key: K, entry: Entry<V>): void {
    this.#entries.delete(key);
    this.#held -= entry.weight;
    this.#bytes -= entry.bytes;
  }

  /** What it holds and how it was used. */
  stats(): CacheStats {
    return {
      held: this.#held,
      capacity: this.capacity,
      bytes: this.#bytes,
      hits: this.#hits,
      misses: this.#misses,
    };
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
