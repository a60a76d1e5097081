/**
 * Recent chains in memory, keyed by the chain header's versionstamp, so a turn costs work
 * proportional to its new tokens instead of a read of the whole history from KV (T4). An
 * entry at an older versionstamp (another process extended the chain) is simply not used.
 *
 * @module
 */
import { type CacheStats, WeightedLru } from "../cache/mod.ts";

/**
 * A least-recently-used cache of per-chain values, bounded by their bytes (and, when asked, by
 * their tokens).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ChainCache } from "./chain_cache.ts";
 * const cache = new ChainCache<number[]>(1_000_000, (ids) => ids.length);
 * cache.put("s1/c0", "00000000000000010000", [1, 2]);
 * assert.deepEqual(cache.get("s1/c0", "00000000000000010000"), [1, 2]);
 * assert.equal(cache.get("s1/c0", "00000000000000020000"), null); // the chain moved on
 * assert.equal(cache.latest("s1/c0")?.versionstamp, "00000000000000010000");
 * ```
 */
export class ChainCache<T> {
  readonly #entries: WeightedLru<string, Entry<T>>;

  /**
   * `sizeOf` gives a value's bytes of memory, its chain's key included (held against `capacity`
   * bytes); `tokensOf` its tokens (by default its bytes), held against `maxTokens`.
   */
  constructor(
    readonly capacity: number,
    sizeOf: (value: T, chain: string) => number,
    tokensOf: (value: T) => number = (value) => sizeOf(value, ""),
    maxTokens = Infinity,
  ) {
    this.#entries = new WeightedLru(
      capacity,
      (chain, entry) => sizeOf(entry.value, chain),
      (_chain, entry) => tokensOf(entry.value),
      maxTokens,
    );
  }

  /** The chain's value at `versionstamp`, or `null` when not cached at that version. */
  get(chain: string, versionstamp: string): T | null {
    const entry = this.#entries.get(chain);
    return entry && entry.versionstamp === versionstamp ? entry.value : null;
  }

  /**
   * The chain's value as last cached and the versionstamp it is at, which another process may
   * have moved past since: a caller checks it (an atomic check, or a read of the header).
   */
  latest(chain: string): { readonly versionstamp: string; readonly value: T } | null {
    return this.#entries.get(chain) ?? null;
  }

  /** Caches the chain's value at `versionstamp`, evicting the least recently used chains. */
  put(chain: string, versionstamp: string, value: T): void {
    this.#entries.set(chain, { versionstamp, value });
  }

  /** Forgets the chain. */
  delete(chain: string): void {
    this.#entries.delete(chain);
  }

  /** Tokens held. */
  get held(): number {
    return this.#entries.held;
  }

  /** Bytes held, as `sizeOf` says. */
  get bytes(): number {
    return this.#entries.bytes;
  }

  /** What it holds (tokens; bytes as `sizeOf` says) and how it was used. */
  stats(): CacheStats {
    return this.#entries.stats();
  }
}

/** A chain's value and the header versionstamp it was read or written at. */
interface Entry<T> {
  readonly versionstamp: string;
  readonly value: T;
}
