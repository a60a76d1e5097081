/**
 * Recent chains in memory, keyed by the chain header's versionstamp, so a turn costs work
 * proportional to its new tokens instead of a read of the whole history from KV (T4). An
 * entry at an older versionstamp (another process extended the chain) is simply not used.
 *
 * @module
 */

interface Entry<T> {
  readonly versionstamp: string;
  readonly value: T;
  readonly weight: number;
}

/**
 * A least-recently-used cache of per-chain values, bounded by their total weight (tokens).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ChainCache } from "./chain_cache.ts";
 * const cache = new ChainCache<number[]>(1_000_000, (ids) => ids.length);
 * cache.put("s1/c0", "00000000000000010000", [1, 2]);
 * assert.deepEqual(cache.get("s1/c0", "00000000000000010000"), [1, 2]);
 * assert.equal(cache.get("s1/c0", "00000000000000020000"), null); // the chain moved on
 * ```
 */
export class ChainCache<T> {
  readonly #entries = new Map<string, Entry<T>>();
  #held = 0;

  constructor(readonly capacity: number, private readonly weigh: (value: T) => number) {}

  /** The chain's value at `versionstamp`, or `null` when not cached at that version. */
  get(chain: string, versionstamp: string): T | null {
    const entry = this.#entries.get(chain);
    if (!entry || entry.versionstamp !== versionstamp) return null;
    this.#entries.delete(chain);
    this.#entries.set(chain, entry);
    return entry.value;
  }

  /** Caches the chain's value at `versionstamp`, evicting the least recently used chains. */
  put(chain: string, versionstamp: string, value: T): void {
    this.delete(chain);
    const weight = this.weigh(value);
    if (weight > this.capacity) return;
    this.#entries.set(chain, { versionstamp, value, weight });
    this.#held += weight;
    for (const [key, entry] of this.#entries) {
      if (this.#held <= this.capacity) break;
      this.#entries.delete(key);
      this.#held -= entry.weight;
    }
  }

  /** Forgets the chain. */
  delete(chain: string): void {
    const entry = this.#entries.get(chain);
    if (!entry) return;
    this.#entries.delete(chain);
    this.#held -= entry.weight;
  }

  /** Total weight held. */
  get held(): number {
    return this.#held;
  }
}
