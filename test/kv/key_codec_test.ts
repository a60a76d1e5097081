import assert from "node:assert/strict";
import { decodeKey, encodeKey } from "../../lib/kv/mod.ts";
import { Prng } from "../_fuzz/prng.ts";

/** A random key part of any type, edge values included. */
function part(prng: Prng): Deno.KvKeyPart {
  switch (prng.int(6)) {
    case 0:
      return Uint8Array.from({ length: prng.int(5) }, () => prng.pick([0, 1, 0xff, prng.int(256)]));
    case 1:
      return Array.from({ length: prng.int(5) }, () => prng.pick(["a", "\u0000", "é", "😀", "z"]))
        .join("");
    case 2:
      return prng.pick([0n, 1n, -1n, 255n, 256n, -256n, 2n ** 64n, -(2n ** 64n), 2n ** 80n + 7n]) *
        BigInt(prng.pick([1, -1]));
    case 3:
      return prng.pick([0, -0, 1.5, -1.5, Infinity, -Infinity, 2 ** 53, -(2 ** -1074), 1e308]);
    default:
      return prng.chance(0.5);
  }
}

Deno.test("encodeKey() orders random keys as Deno KV lists them, and decodeKey() reverses it", async () => {
  const prng = new Prng(20261128);
  const kv = await Deno.openKv(":memory:");
  try {
    const keys = new Map<string, Deno.KvKey>();
    for (let i = 0; i < 400; i++) {
      const key = Array.from({ length: 1 + prng.int(3) }, () => part(prng));
      keys.set(Array.from(encodeKey(key)).join(","), key);
      await kv.set(["k", ...key], i);
    }
    const listed: Deno.KvKey[] = [];
    for await (const entry of kv.list({ prefix: ["k"] })) listed.push(entry.key.slice(1));
    const compare = (a: Uint8Array, b: Uint8Array) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
      return a.length - b.length;
    };
    const sorted = [...keys.values()].sort((a, b) => compare(encodeKey(a), encodeKey(b)));
    assert.equal(listed.length, keys.size);
    assert.deepEqual(sorted, listed);
    for (const key of keys.values()) assert.deepEqual(decodeKey(encodeKey(key)), key);
  } finally {
    kv.close();
  }
});

Deno.test("decodeKey() refuses bytes that are no key", () => {
  for (const bad of [[0x02, 0x61], [0x99], [0x21, 1, 2], [0x1d, 9, 1]]) {
    assert.throws(() => decodeKey(Uint8Array.from(bad)), TypeError);
  }
});
