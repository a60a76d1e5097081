/**
 * A map that keeps the most recently used entries up to a total of bytes: chains' token arrays,
 * long text sections' tokens, the stable JSON of a request's settings. Each use says what an
 * entry's memory is (`sizeOf`), and may count it in a unit of its own too (tokens, characters).
 *
 * @module
 */

interface Entry<V> {
  readonly value: V;
  readonly units: number;
  readonly bytes: number;
}

/** What a cache holds and how it is used, for `/metrics`. */
export interface CacheStats {
  /** What it holds, in the cache's own unit (tokens, characters; bytes where it has none). */
  readonly held: number;
  /** Most bytes it holds: its share of the memory budget. */
  readonly capacity: number;
  /** Bytes of memory its entries take, as the cache estimates them (see each one's `sizeOf`). */
  readonly bytes: number;
  /** Lookups that found an entry, and that did not, since it was made. */
  readonly hits: number;
  readonly misses: number;
}

/**
 * Entries of at most `capacity` bytes in all (and at most `maxUnits` of their own unit), the
 * least recently used dropped first. An entry larger than the whole capacity is not kept.
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
 * assert.equal(cache.bytes, 6);
 * ```
 */
export class WeightedLru<K, V> {
  readonly #entries = new Map<K, Entry<V>>();
  #units = 0;
  #bytes = 0;
  #hits = 0;
  #misses = 0;

  /**
   * `sizeOf` gives an entry's bytes of memory, held against `capacity`; `unitsOf`, what it
   * counts in the cache's own unit (by default its bytes), held against `maxUnits`.
   */
  constructor(
    readonly capacity: number,
    private readonly sizeOf: (key: K, value: V) => number,
    private readonly unitsOf: (key: K, value: V) => number = sizeOf,
    readonly maxUnits: number = Infinity,
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
    const bytes = this.sizeOf(key, value);
    const units = this.unitsOf(key, value);
    if (bytes > this.capacity || units > this.maxUnits) return;
    this.#entries.set(key, { value, units, bytes });
    this.#units += units;
    this.#bytes += bytes;
    for (const [old, entry] of this.#entries) {
      if (this.#bytes <= this.capacity && this.#units <= this.maxUnits) break;
      this.#drop(old, entry);
    }
  }

  /** Forgets `key`. */
  delete(key: K): void {
    const entry = this.#entries.get(key);
    if (entry) this.#drop(key, entry);
  }

  /** Forgets every key `matches` says to: O(entries). */
  deleteWhere(matches: (key: K) => boolean): void {
    for (const [key, entry] of this.#entries) if (matches(key)) this.#drop(key, entry);
  }

  #drop(key: K, entry: Entry<V>): void {
    this.#entries.delete(key);
    this.#units -= entry.units;
    this.#bytes -= entry.bytes;
  }

  /** What it holds and how it was used. */
  stats(): CacheStats {
    return {
      held: this.#units,
      capacity: this.capacity,
      bytes: this.#bytes,
      hits: this.#hits,
      misses: this.#misses,
    };
  }

  /** What it holds, in its own unit. */
  get held(): number {
    return this.#units;
  }

  /** Bytes it holds. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Entries held. */
  get size(): number {
    return this.#entries.size;
  }
}
