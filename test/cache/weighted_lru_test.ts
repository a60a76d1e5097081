import assert from "node:assert/strict";
import { WeightedLru } from "../../lib/cache/mod.ts";

const byLength = () => new WeightedLru<string, number[]>(10, (_key, ids) => ids.length);

Deno.test("the least recently used entries go first, until the weight fits", () => {
  const cache = byLength();
  cache.set("a", [1, 2, 3]);
  cache.set("b", [1, 2, 3]);
  cache.set("c", [1, 2, 3]);
  cache.get("a"); // order now b, c, a
  cache.set("d", [1, 2, 3, 4, 5]); // 14 > 10: b and c go
  assert.equal(cache.get("b"), undefined);
  assert.equal(cache.get("c"), undefined);
  assert.deepEqual(cache.get("a"), [1, 2, 3]);
  assert.deepEqual(cache.get("d"), [1, 2, 3, 4, 5]);
  assert.equal(cache.held, 8);
  assert.equal(cache.size, 2);
});

Deno.test("an entry heavier than the capacity is not kept, and takes nothing out", () => {
  const cache = byLength();
  cache.set("a", [1]);
  cache.set("huge", Array(11).fill(0));
  assert.equal(cache.get("huge"), undefined);
  assert.deepEqual(cache.get("a"), [1]);
  assert.equal(cache.held, 1);
});

Deno.test("setting a key again replaces its weight; delete gives it back", () => {
  const cache = byLength();
  cache.set("a", [1, 2, 3, 4]);
  cache.set("a", [1]);
  assert.equal(cache.held, 1);
  cache.delete("a");
  cache.delete("missing");
  assert.equal(cache.held, 0);
  assert.equal(cache.size, 0);
});

Deno.test("deleteWhere() forgets the keys it is told to and gives their weight back", () => {
  const cache = byLength();
  cache.set("s1\na", [1, 2]);
  cache.set("s1\nb", [1]);
  cache.set("s2\na", [1, 2, 3]);
  cache.deleteWhere((key) => key.startsWith("s1\n"));
  assert.equal(cache.get("s1\na"), undefined);
  assert.equal(cache.get("s1\nb"), undefined);
  assert.deepEqual(cache.get("s2\na"), [1, 2, 3]);
  assert.equal(cache.held, 3);
  assert.equal(cache.size, 1);
});
