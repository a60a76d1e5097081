/**
 * The tokens of long text sections, kept across requests. Every session of a run sends the
 * same system prompt and tools (a Claude Code request: ~9k tokens of them), and a chain's first
 * turn encodes them whole; encoding is a pure function of the section's text and its place, so
 * a section seen before costs a lookup instead. Only sections of at least `minChars` are kept
 * (short ones cost little to encode), the least recently used dropped past `capacityChars`.
 *
 * @module
 */
import { WeightedLru } from "../cache/mod.ts";
import type { EncodeGuard } from "./encode_guard.ts";

/** Options of {@linkcode SectionCache}. */
export interface SectionCacheOptions {
  /** Shortest section kept, in characters. */
  readonly minChars: number;
  /** Most characters of section text held; the least recently used go first. */
  readonly capacityChars: number;
}

/**
 * Memoizes `encode(text, section)` for long sections.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SectionCache } from "./section_cache.ts";
 * const codes = (text: string) => [...text].map((c) => c.charCodeAt(0));
 * const cache = new SectionCache(codes, { minChars: 2, capacityChars: 100 });
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
    this.#entries = new WeightedLru(options.capacityChars, (key) => key.length);
  }

  /**
   * The tokens of `text` as section `section`; the array is shared, never to be changed. `guard`
   * watches the encode (a section it stops is not kept).
   */
  encode(text: string, section: number, guard?: EncodeGuard): readonly number[] {
    if (text.length < this.options.minChars || text.length > this.options.capacityChars) {
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
}
