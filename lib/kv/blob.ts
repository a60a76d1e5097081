/**
 * A JSON value of any size kept in KV as chunks below the 64 KiB value limit, under one key
 * prefix: `[...prefix, 0]`, `[...prefix, 1]`, … Written before the record that names it, so a
 * reader never sees a record whose blob is missing.
 *
 * @module
 */
import { commit } from "./atomic.ts";
import { CHUNK_BYTES } from "./chunked.ts";
import { KV_MAX_COMMIT_BYTES, KV_MAX_GET_MANY } from "./keys.ts";
import type { Store } from "./store.ts";

/**
 * Writes `value` as JSON chunks under `prefix`; returns how many chunks it took.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readBlob, writeBlob } from "./blob.ts";
 * const kv = await Deno.openKv(":memory:");
 * const chunks = await writeBlob(kv, ["rollout_task", "grp_1"], {
 *   repo: "/r",
 *   eval_cmd: "true",
 * });
 * assert.deepEqual(await readBlob(kv, ["rollout_task", "grp_1"], chunks), {
 *   repo: "/r",
 *   eval_cmd: "true",
 * });
 * kv.close();
 * ```
 */
export function writeBlob(kv: Store, prefix: Deno.KvKey, value: unknown): Promise<number> {
  return writeBytes(kv, prefix, new TextEncoder().encode(JSON.stringify(value)));
}

/**
 * `bytes` written under `prefix` in chunks, as many to a commit as fit; resolves to the number
 * of chunks (at least one).
 */
export async function writeBytes(
  kv: Store,
  prefix: Deno.KvKey,
  bytes: Uint8Array,
): Promise<number> {
  const chunks = blobChunks(bytes);
  await writeChunks(kv, prefix, chunks);
  return chunks.length;
}

/**
 * `bytes` cut into the chunks a blob is kept in (at least one, the last maybe empty), views of
 * it (a commit copies what it writes): what {@linkcode writeChunks} writes, so a record can name
 * its blob's chunk count before it is written.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { blobChunks } from "./blob.ts";
 * assert.equal(blobChunks(new Uint8Array(0)).length, 1);
 * ```
 */
export function blobChunks(bytes: Uint8Array): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length || chunks.length === 0; at += CHUNK_BYTES) {
    chunks.push(bytes.subarray(at, at + CHUNK_BYTES));
  }
  return chunks;
}

/** A blob's `chunks` written under `prefix`, as many to a commit as fit. */
export async function writeChunks(
  kv: Store,
  prefix: Deno.KvKey,
  chunks: readonly Uint8Array[],
): Promise<void> {
  const perCommit = Math.max(1, Math.floor((KV_MAX_COMMIT_BYTES - 4096) / CHUNK_BYTES));
  for (let first = 0; first < chunks.length; first += perCommit) {
    const batch = chunks.slice(first, first + perCommit);
    const result = await commit(() => {
      const op = kv.atomic();
      batch.forEach((chunk, j) => op.set([...prefix, first + j], chunk));
      return op;
    });
    if (!result.ok) throw new Error(`Cannot write blob ${JSON.stringify(prefix)}`);
  }
}

/**
 * The JSON value written under `prefix` in `count` chunks.
 *
 * @throws {Error} naming the prefix when a chunk is missing.
 */
export async function readBlob<T>(kv: Store, prefix: Deno.KvKey, count: number): Promise<T> {
  return JSON.parse(new TextDecoder().decode(await readBytes(kv, prefix, count))) as T;
}

/**
 * The bytes written under `prefix` in `count` chunks.
 *
 * @throws {Error} naming the prefix when a chunk is missing.
 */
export async function readBytes(
  kv: Store,
  prefix: Deno.KvKey,
  count: number,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for (let first = 0; first < count; first += KV_MAX_GET_MANY) {
    const batch = Array.from(
      { length: Math.min(KV_MAX_GET_MANY, count - first) },
      (_, j) => [...prefix, first + j],
    );
    for (const entry of await kv.getMany<Uint8Array[]>(batch)) {
      if (entry.value === null) {
        throw new Error(
          `Cannot read blob ${JSON.stringify(prefix)}: chunk ${
            String(entry.key.at(-1))
          } is missing`,
        );
      }
      parts.push(entry.value);
    }
  }
  const bytes = new Uint8Array(parts.reduce((size, part) => size + part.length, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}

/** Deletes every chunk under `prefix`. */
export async function deleteBlob(kv: Store, prefix: Deno.KvKey): Promise<void> {
  for await (const entry of kv.list({ prefix })) await kv.delete(entry.key);
}
