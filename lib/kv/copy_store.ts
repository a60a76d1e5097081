/**
 * Copying every entry of one store into another, empty one: a KV file into a PostgreSQL
 * database when a gateway moves to several hosts, and back. Values are copied as they are (a
 * versionstamp is the destination's own: nothing keeps one across a copy); commits are batched
 * within Deno KV's limits, so either store can be the destination.
 *
 * @module
 */
import { encodeKey } from "./key_codec.ts";
import { encodeValue } from "./postgres_store.ts";
import { commit } from "./atomic.ts";
import { KV_MAX_COMMIT_BYTES } from "./keys.ts";
import type { Store } from "./store.ts";

/** Entries one commit writes at most (Deno KV takes 1,000 mutations). */
const BATCH_ENTRIES = 500;
/** Bytes of keys and values one commit writes at most, well within Deno KV's 819,200. */
const BATCH_BYTES = KV_MAX_COMMIT_BYTES / 2;

/** A destination that already holds something: a copy would mix two gateways' records. */
export class StoreNotEmptyError extends Error {
  constructor() {
    super("Cannot copy into a store that is not empty: give an empty database or a new KV file");
    this.name = "StoreNotEmptyError";
  }
}

/**
 * Copies every entry of `from` into `to`, which must be empty; how many entries and bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { copyStore } from "./copy_store.ts";
 * const [from, to] = [await Deno.openKv(":memory:"), await Deno.openKv(":memory:")];
 * await from.set(["session", "s1"], { id: "s1" });
 * assert.equal((await copyStore(from, to)).entries, 1);
 * assert.deepEqual((await to.get(["session", "s1"])).value, { id: "s1" });
 * from.close();
 * to.close();
 * ```
 * @throws {StoreNotEmptyError} when `to` holds an entry.
 */
export async function copyStore(
  from: Store,
  to: Store,
  onBatch?: (entries: number) => void,
): Promise<{ entries: number; bytes: number }> {
  for await (const _ of to.list({ prefix: [] }, { limit: 1 })) throw new StoreNotEmptyError();
  let batch: Deno.KvEntry<unknown>[] = [];
  let batchBytes = 0;
  let entries = 0;
  let bytes = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const written = batch;
    const result = await commit(() => {
      const op = to.atomic();
      for (const entry of written) op.set(entry.key, entry.value);
      return op;
    });
    if (!result.ok) throw new Error("Cannot copy: a batch's commit was refused");
    entries += written.length;
    onBatch?.(entries);
    batch = [];
    batchBytes = 0;
  };
  for await (const entry of from.list({ prefix: [] }, { batchSize: 500 })) {
    const size = encodeKey(entry.key).length + encodeValue(entry.value).length;
    if (batch.length >= BATCH_ENTRIES || batchBytes + size > BATCH_BYTES) await flush();
    batch.push(entry);
    batchBytes += size;
    bytes += size;
  }
  await flush();
  return { entries, bytes };
}

/**
 * The first entry in which `a` and `b` differ (a key one has and the other has not, or a value
 * not byte-equal once serialized), or `null` when they hold the same entries.
 */
export async function firstDifference(a: Store, b: Store): Promise<string | null> {
  const left = a.list({ prefix: [] }, { batchSize: 500 });
  const right = b.list({ prefix: [] }, { batchSize: 500 });
  for (;;) {
    const [x, y] = await Promise.all([left.next(), right.next()]);
    if (x.done && y.done) return null;
    if (x.done || y.done) {
      const extra = (x.done ? y.value : x.value) as Deno.KvEntry<unknown>;
      return `${JSON.stringify(extra.key, bigints)} is only in one store`;
    }
    const [ex, ey] = [x.value as Deno.KvEntry<unknown>, y.value as Deno.KvEntry<unknown>];
    if (!sameBytes(encodeKey(ex.key), encodeKey(ey.key))) {
      return `${JSON.stringify(ex.key, bigints)} and ${JSON.stringify(ey.key, bigints)} differ`;
    }
    if (!sameBytes(encodeValue(ex.value), encodeValue(ey.value))) {
      return `${JSON.stringify(ex.key, bigints)}: the values differ`;
    }
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function bigints(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? `${value}n` : value;
}
