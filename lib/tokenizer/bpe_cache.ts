/**
 * A cheaper cache for the BPE model's merges of a word. The library keeps them in an LRU map,
 * and every hit costs four map operations (`has`, `get`, `delete`, `set`): about 60% of the
 * model's time on a turn's tool output. The cache only saves recomputing the merges, so it
 * decides speed and never tokens.
 *
 * This cache has two generations. A hit in the young map costs one lookup. A hit in the old map
 * moves the word to the young one. When the young map is full it becomes the old one, and the
 * words no one used since are dropped. It holds at most twice the library's capacity.
 *
 * @module
 */

/** The cache interface the library's BPE model calls. */
export interface WordCache {
  get(word: string): string[] | undefined;
  put(word: string, merged: string[]): void;
  clear(): void;
}

/** The parts of the library's BPE model this reads and replaces. */
interface BpeModel {
  cache?: WordCache;
  readonly cache_capacity?: number;
}

/**
 * Gives `model` a {@linkcode generationalCache} of the library's capacity, when it is a BPE
 * model with a word cache. Returns whether it did.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { installBpeCache, type WordCache } from "./bpe_cache.ts";
 * const unused: WordCache = { get: () => undefined, put() {}, clear() {} };
 * const model = { cache: unused, cache_capacity: 4 };
 * assert.equal(installBpeCache(model), true);
 * model.cache.put("hello", ["hel", "lo"]);
 * assert.deepEqual(model.cache.get("hello"), ["hel", "lo"]);
 * assert.equal(installBpeCache({}), false);
 * ```
 */
export function installBpeCache(model: BpeModel): boolean {
  if (!model.cache || typeof model.cache_capacity !== "number" || model.cache_capacity < 1) {
    return false;
  }
  model.cache = generationalCache(model.cache_capacity);
  return true;
}

/**
 * A word cache of two generations of `capacity` words each.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { generationalCache } from "./bpe_cache.ts";
 * const cache = generationalCache(2);
 * cache.put("a", ["a"]);
 * cache.put("b", ["b"]);
 * cache.put("c", ["c"]); // "a" and "b" are now the old generation
 * assert.deepEqual(cache.get("a"), ["a"]); // moved back to the young one
 * cache.put("d", ["d"]); // the young one ("c", "a") is full: "b" goes
 * assert.equal(cache.get("b"), undefined);
 * assert.deepEqual(cache.get("c"), ["c"]);
 * ```
 */
export function generationalCache(capacity: number): WordCache {
  let young = new Map<string, string[]>();
  let old = new Map<string, string[]>();
  const put = (word: string, merged: string[]) => {
    if (young.size >= capacity) {
      old = young;
      young = new Map();
    }
    young.set(word, merged);
  };
  return {
    get(word) {
      const hit = young.get(word);
      if (hit !== undefined) return hit;
      const older = old.get(word);
      if (older !== undefined) put(word, older);
      return older;
    },
    put,
    clear() {
      young = new Map();
      old = new Map();
    },
  };
}
