/**
 * The scripted engine's prefix cache, as far as an engine reports it: each finished call's
 * sequence (prompt + output) is kept, the least recently used dropped past a bound, and a new
 * call's `cached_tokens` is the longest prefix of its prompt a kept sequence of the same cache
 * namespace (`cache_salt`) starts with. No KV is simulated: only the count an engine reports.
 *
 * @module
 */

/** Sequences kept by default. */
export const PREFIX_CACHE_ENTRIES = 32;

/** Finished sequences, most recently used last. */
export class PrefixCache {
  readonly #entries: { salt: string; ids: readonly number[] }[] = [];

  constructor(readonly capacity = PREFIX_CACHE_ENTRIES) {}

  /**
   * Prompt tokens of `prompt` a kept sequence of namespace `salt` covers (one short of the
   * whole prompt, as an engine always computes the last prompt token); the sequence found is
   * used again.
   */
  match(prompt: readonly number[], salt = ""): number {
    let best = 0;
    let at = -1;
    const limit = prompt.length - 1;
    this.#entries.forEach((entry, i) => {
      if (entry.salt !== salt) return;
      const end = Math.min(limit, entry.ids.length);
      let n = 0;
      while (n < end && entry.ids[n] === prompt[n]) n++;
      if (n > best) [best, at] = [n, i];
    });
    if (at >= 0) this.#entries.push(...this.#entries.splice(at, 1));
    return best;
  }

  /** Keeps a finished call's sequence, dropping the least recently used past the bound. */
  add(ids: readonly number[], salt = ""): void {
    if (this.capacity === 0) return;
    this.#entries.push({ salt, ids });
    if (this.#entries.length > this.capacity) this.#entries.shift();
  }
}
