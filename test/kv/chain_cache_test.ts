import assert from "node:assert/strict";
import { ChainCache } from "../../lib/kv/mod.ts";

const V1 = "00000000000000010000";
const V2 = "00000000000000020000";

const newCache = (capacity: number) => new ChainCache<number[]>(capacity, (ids) => ids.length);
const range = (length: number) => Array.from({ length }, (_, i) => i);

Deno.test("ChainCache.get() returns the value put at the same versionstamp only", () => {
  const cache = newCache(100);
  cache.put("s1/c0", V1, [5, 6, 7]);
  assert.deepEqual(cache.get("s1/c0", V1), [5, 6, 7]);
  assert.equal(cache.get("s1/c0", V2), null);
  assert.equal(cache.get("s1/c1", V1), null);
});

Deno.test("ChainCache.put() replaces the chain's value and version", () => {
  const cache = newCache(100);
  cache.put("s1/c0", V1, [1, 2]);
  cache.put("s1/c0", V2, [3]);
  assert.equal(cache.get("s1/c0", V1), null);
  assert.deepEqual(cache.get("s1/c0", V2), [3]);
  assert.equal(cache.held, 1);
});

Deno.test("ChainCache.put() evicts the least recently used chains beyond its capacity", () => {
  const cache = newCache(10);
  cache.put("a", V1, range(4));
  cache.put("b", V1, range(4));
  cache.get("a", V1); // a is now more recent than b
  cache.put("c", V1, range(4));
  assert.deepEqual(cache.get("a", V1), range(4));
  assert.equal(cache.get("b", V1), null);
  assert.deepEqual(cache.get("c", V1), range(4));
  assert.equal(cache.held, 8);
});

Deno.test("ChainCache.put() keeps a chain that fits beside a small one", () => {
  const cache = newCache(10_000);
  cache.put("small", V1, range(100));
  cache.put("large", V1, range(6_000));
  assert.equal(cache.get("small", V1)?.length, 100);
  assert.equal(cache.get("large", V1)?.length, 6_000);
});

Deno.test("ChainCache.put() does not keep a value heavier than the capacity, nor evict for it", () => {
  const cache = newCache(10);
  cache.put("a", V1, range(5));
  cache.put("huge", V1, range(11));
  assert.equal(cache.get("huge", V1), null);
  assert.deepEqual(cache.get("a", V1), range(5));
});

Deno.test("ChainCache.delete() forgets the chain and its weight", () => {
  const cache = newCache(10);
  cache.put("a", V1, range(5));
  cache.delete("a");
  assert.equal(cache.get("a", V1), null);
  assert.equal(cache.held, 0);
});
