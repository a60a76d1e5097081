/**
 * The storage port's contract (`lib/kv/store.ts`), one suite run against both backends: Deno KV
 * (`:memory:`) and PostgreSQL (a throwaway cluster, `test/_postgres.ts`). Values round-trip; a
 * commit applies only when every check holds, absent-key checks included; commits racing on one
 * key lose no update; two commits that each check the key the other writes never both apply (no
 * write skew); listings come back in Deno KV's key order, by prefix or range, reversed, paged
 * with cursors; expiry hides an entry after its time, never before.
 */
import assert from "node:assert/strict";
import { openPostgresStore, type Store } from "../../lib/kv/mod.ts";
import { pollUntil } from "../../lib/timing/mod.ts";
import { startPostgres } from "../_postgres.ts";

/** The contract's clauses, each run on a fresh, empty store of each backend. */
const CLAUSES: [string, (store: Store, backend: string) => Promise<void>][] = [];

function contract(name: string, body: (store: Store, backend: string) => Promise<void>): void {
  CLAUSES.push([name, body]);
}

/** Runs every clause on stores `open` opens. */
async function holdsOn(
  t: Deno.TestContext,
  backend: string,
  open: () => Promise<Store & { end?(): Promise<void> }>,
): Promise<void> {
  for (const [name, body] of CLAUSES) {
    await t.step(name, async () => {
      const store = await open();
      try {
        await body(store, backend);
      } finally {
        if ("end" in store && store.end) await store.end();
        else store.close();
      }
    });
  }
}

const VALUES: unknown[] = [
  "text with ünïcode and \u0000",
  42,
  -0.5,
  10n ** 30n,
  true,
  null,
  [1, "two", [3]],
  { nested: { deep: [1, 2, { x: "y" }] }, bytes: new Uint8Array([0, 1, 255]) },
  new Uint8Array(60_000).fill(7),
  new Map([["k", 1]]),
];

contract("a value comes back as it was stored, with its versionstamp", async (store) => {
  for (const [i, value] of VALUES.entries()) {
    const written = await store.set(["v", i], value);
    assert.equal(written.ok, true);
    assert.match(written.versionstamp, /^[0-9a-f]{20}$/);
    const entry = await store.get(["v", i]);
    assert.deepEqual(entry, { key: ["v", i], value, versionstamp: written.versionstamp });
  }
  assert.deepEqual(await store.get(["v", "absent"]), {
    key: ["v", "absent"],
    value: null,
    versionstamp: null,
  });
  const many = await store.getMany([["v", 1], ["v", "absent"], ["v", 0]]);
  assert.deepEqual(many.map((entry) => entry.value), [42, null, VALUES[0]]);
  await store.delete(["v", 1]);
  assert.equal((await store.get(["v", 1])).value, null);
});

contract("versionstamps rise; a commit applies only when each check holds", async (store) => {
  const first = await store.set(["k"], 1);
  const second = await store.set(["k"], 2);
  assert.ok(second.versionstamp > first.versionstamp);
  const stale = await store.atomic().check({ key: ["k"], versionstamp: first.versionstamp })
    .set(["k"], 3).set(["other"], 1).commit();
  assert.deepEqual(stale, { ok: false });
  assert.equal((await store.get(["k"])).value, 2);
  assert.equal((await store.get(["other"])).value, null, "nothing of a failed commit applies");
  const current = await store.get(["k"]);
  const applied = await store.atomic().check(current).set(["k"], 4).set(["other"], 5).commit();
  assert.equal(applied.ok, true);
  // Everything one commit writes shares its versionstamp.
  const [k, other] = await store.getMany([["k"], ["other"]]);
  assert.equal(k.versionstamp, other.versionstamp);
  assert.equal(k.versionstamp, applied.ok ? applied.versionstamp : null);
  // An absent-key check holds while the key is absent.
  const absent = { key: ["new"], versionstamp: null };
  assert.equal((await store.atomic().check(absent).set(["new"], 1).commit()).ok, true);
  assert.equal((await store.atomic().check(absent).set(["new"], 2).commit()).ok, false);
  assert.equal((await store.get(["new"])).value, 1);
});

contract("sum adds to a KvU64, from zero when absent", async (store) => {
  await store.atomic().sum(["n"], 5n).commit();
  await store.atomic().sum(["n"], 7n).commit();
  assert.deepEqual((await store.get(["n"])).value, new Deno.KvU64(12n));
  await store.set(["m"], new Deno.KvU64(2n ** 64n - 1n));
  await store.atomic().sum(["m"], 2n).commit();
  assert.deepEqual((await store.get(["m"])).value, new Deno.KvU64(1n), "modulo 2^64");
});

contract("commits racing on one key lose no update", async (store) => {
  const increment = async () => {
    for (;;) {
      const entry = await store.get<number>(["counter"]);
      const result = await store.atomic().check(entry).set(["counter"], (entry.value ?? 0) + 1)
        .commit().catch((error) => {
          if (/database is locked/.test(error.message)) return { ok: false };
          throw error;
        });
      if (result.ok) return;
    }
  };
  await Promise.all(Array.from({ length: 64 }, increment));
  assert.equal((await store.get(["counter"])).value, 64);
  // Create-if-absent, raced: exactly one wins.
  const claims = await Promise.all(
    Array.from(
      { length: 32 },
      (_, i) =>
        store.atomic().check({ key: ["claim"], versionstamp: null }).set(["claim"], i).commit(),
    ),
  );
  assert.equal(claims.filter((claim) => claim.ok).length, 1);
});

contract("two commits that each check the key the other writes never both apply", async (store) => {
  for (let round = 0; round < 50; round++) {
    const [a, b] = [["a", round], ["b", round]];
    await store.atomic().set(a, 0).set(b, 0).commit();
    const [ea, eb] = await store.getMany([a, b]);
    const results = await Promise.all([
      store.atomic().check(ea).set(b, "from a").commit(),
      store.atomic().check(eb).set(a, "from b").commit(),
    ]);
    assert.equal(results.filter((result) => result.ok).length, 1, `round ${round}`);
  }
});

/** Keys of every part type, to be listed in Deno KV's order. */
const MIXED: Deno.KvKey[] = [
  [1n],
  [2],
  [-1n],
  [-2.5],
  ["a"],
  ["b"],
  [new Uint8Array([0])],
  [new Uint8Array([])],
  [true],
  [false],
  ["a", 1],
  ["a\u0000b"],
  [""],
  [Infinity],
  [-Infinity],
  [0],
  [2n ** 70n],
  [-(2n ** 70n)],
  ["é"],
  ["z"],
];

/** The order Deno KV itself lists `keys` under `prefix` in. */
async function kvOrder(prefix: Deno.KvKey, keys: Deno.KvKey[]): Promise<Deno.KvKey[]> {
  const kv = await Deno.openKv(":memory:");
  for (const key of keys) await kv.set([...prefix, ...key], 1);
  const out: Deno.KvKey[] = [];
  for await (const entry of kv.list({ prefix })) out.push(entry.key);
  kv.close();
  return out;
}

contract(
  "listings come back in Deno KV's key order, by prefix or range, reversed, paged",
  async (store) => {
    const prefix = ["t"];
    for (const key of MIXED) await store.set([...prefix, ...key], key.length);
    await store.set(prefix, "the prefix's own key is not listed");
    await store.set(["u", 1], "another prefix");
    const list = async (selector: Deno.KvListSelector, options: Deno.KvListOptions = {}) => {
      const out: Deno.KvKey[] = [];
      for await (const entry of store.list(selector, options)) out.push(entry.key);
      return out;
    };
    const order = await kvOrder(prefix, MIXED);
    assert.deepEqual(await list({ prefix }), order);
    assert.deepEqual(await list({ prefix }, { reverse: true }), [...order].reverse());
    assert.deepEqual(
      await list({ prefix, start: ["t", "a"] }),
      order.slice(order.findIndex((key) => key[1] === "a" && key.length === 2)),
    );
    assert.deepEqual(await list({ prefix, end: ["t", "a"] }), order.slice(0, 3));
    assert.deepEqual(await list({ start: ["t", "a"], end: ["t", "b"] }), order.slice(3, 6));
    // Paged with cursors, forward and back: every key once, in order.
    for (const reverse of [false, true]) {
      const paged: Deno.KvKey[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 100; pages++) {
        const iterator = store.list({ prefix }, { limit: 3, cursor, reverse });
        let count = 0;
        for await (const entry of iterator) (paged.push(entry.key), count++);
        if (count < 3) break;
        cursor = iterator.cursor;
      }
      assert.deepEqual(paged, reverse ? [...order].reverse() : order);
    }
  },
);

contract("a listing refuses a cursor it cannot read", async (store) => {
  await store.set(["t", 1], 1);
  const read = async (cursor: string) => {
    for await (const _ of store.list({ prefix: ["t"] }, { cursor })) { /* drain */ }
  };
  await assert.rejects(read("%%% not base64"), TypeError);
});

contract(
  "an entry set to expire is there before its time and gone after it",
  async (store, backend) => {
    await store.set(["short"], "soon gone", { expireIn: 200 });
    await store.set(["long"], "stays", { expireIn: 3_600_000 });
    assert.equal((await store.get(["short"])).value, "soon gone");
    if (backend === "kv") return; // Deno KV drops expired entries lazily, up to ~60 s late.
    const gone = async () => (await store.get(["short"])).value === null;
    assert.ok(await pollUntil(gone, { timeoutMs: 10_000, intervalMs: 50 }), "it never expired");
    assert.equal((await store.get(["long"])).value, "stays");
    // A check sees an expired entry as absent: create-if-absent takes its place.
    const taken = await store.atomic().check({ key: ["short"], versionstamp: null })
      .set(["short"], "again").commit();
    assert.equal(taken.ok, true);
  },
);

Deno.test("the store contract holds on Deno KV", (t) =>
  holdsOn(t, "kv", () => Deno.openKv(":memory:")));

Deno.test("the store contract holds on PostgreSQL", async (t) => {
  const cluster = await startPostgres();
  try {
    await holdsOn(t, "postgres", async () =>
      await openPostgresStore(await cluster.database(), {
        maxConnections: 8,
        statementTimeoutMs: 10_000,
        connectTimeoutMs: 5_000,
        sweepIntervalMs: 0,
      }));
  } finally {
    await cluster.close();
  }
});
