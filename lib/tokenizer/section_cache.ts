/**
 * The tokens of long text sections, kept across requests. Every session of a run sends the
 * same system prompt and tools (a Claude Code request: ~9k tokens of them), and a chain's first
 * turn encodes them whole; encoding is a pure function of the section's text and its place, so
 * a section seen before costs a lookup instead. Only sections of at least `minChars` are kept
 * (short ones cost little to encode), the least recently used dropped past `capacityBytes`.
 *
 * @module
 */
import { type CacheStats, WeightedLru } from "../cache/mod.ts";
import type { EncodeGuard } from "./encode_guard.ts";

/** Options of {@linkcode SectionCache}. */
export interface SectionCacheOptions {
  /** Shortest section kept, in characters. */
  readonly minChars: number;
  /** Most bytes of section text and tokens held; the least recently used go first. */
  readonly capacityBytes: number;
}

/**
 * Memoizes `encode(text, section)` for long sections.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SectionCache } from "./section_cache.ts";
 * const codes = (text: string) => [...text].map((c) => c.charCodeAt(0));
 * const cache = new SectionCache(codes, { minChars: 2, capacityBytes: 1024 });
 * // The same array: "hello" is encoded once.
 * assert.equal(cache.encode("hello", 0), cache.encode("hello", 0));
 * ```
 */
export class SectionCache {
  readonly #entries: WeightedLru<string, readonly number[]>;

  constructor(
    private readonly encodeSection: (
      text: string,
      section: number,
      guard?: EncodeGuard,
    ) => number[],
    private readonly options: SectionCacheOptions,
  ) {
    this.#entries = new WeightedLru(options.capacityBytes, sectionBytes, (key) => key.length);
  }

  /**
   * The tokens of `text` as section `section`; the array is shared, never to be changed. `guard`
   * watches the encode (a section it stops is not kept).
   */
  encode(text: string, section: number, guard?: EncodeGuard): readonly number[] {
    if (text.length < this.options.minChars || text.length > this.options.capacityBytes) {
      return this.encodeSection(text, section, guard);
    }
    // The section index decides how some pre-tokenizers treat the start (Metaspace's "first").
    const key = `${section}\u0000${text}`;
    const hit = this.#entries.get(key);
    if (hit) {
      guard?.add(hit.length);
      return hit;
    }
    const ids = this.encodeSection(text, section, guard);
    this.#entries.set(key, ids);
    return ids;
  }

  /** Characters of section text held. */
  get held(): number {
    return this.#entries.held;
  }

  /** What it holds (characters of text; bytes) and how it was used. */
  stats(): CacheStats {
    return this.#entries.stats();
  }
}

/** Bytes V8 spends on an array or a string besides its elements (header, map, length). */
const OBJECT_OVERHEAD = 32;

/**
 * A kept section's bytes: its key (a byte a character while it is all Latin-1, two after) and
 * its token array (eight bytes an element: a small integer in a tagged slot).
 */
function sectionBytes(key: string, ids: readonly number[]): number {
  const perChar = /[\u0100-\uffff]/.test(key) ? 2 : 1;
  return perChar * key.length + 8 * ids.length + 2 * OBJECT_OVERHEAD;
}
