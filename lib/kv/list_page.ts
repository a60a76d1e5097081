/**
 * One page of a KV listing from a client's cursor: the cursor a listing handed out, or none.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import type { Store } from "./store.ts";

/** A listing cursor that KV cannot read (HTTP 400): not one a listing handed out. */
export class InvalidCursorError extends RangeError implements CodedError {
  readonly code = "invalid_cursor" as const;
  constructor(cursor: string) {
    super(
      `Invalid cursor "${
        cursor.length > 64 ? cursor.slice(0, 64) + "…" : cursor
      }": pass the next_cursor of an earlier page`,
    );
    this.name = "InvalidCursorError";
  }
}

/**
 * Up to `limit` entries under `prefix` from `cursor`, and the cursor of the next page (`null`
 * when this page is the last).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InvalidCursorError, listPage } from "./list_page.ts";
 * const kv = await Deno.openKv(":memory:");
 * await kv.set(["t", 1], "a");
 * await kv.set(["t", 2], "b");
 * const first = await listPage<string>(kv, ["t"], { limit: 1 });
 * assert.deepEqual(first.entries.map((e) => e.value), ["a"]);
 * const next = await listPage<string>(kv, ["t"], { limit: 1, cursor: first.cursor! });
 * assert.deepEqual(next.entries.map((e) => e.value), ["b"]);
 * await assert.rejects(listPage(kv, ["t"], { limit: 1, cursor: "zz" }), InvalidCursorError);
 * kv.close();
 * ```
 * @throws {InvalidCursorError} for a cursor KV cannot read.
 */
export async function listPage<T>(
  kv: Store,
  prefix: Deno.KvKey,
  options: { readonly limit: number; readonly cursor?: string; readonly reverse?: boolean },
): Promise<{ entries: Deno.KvEntry<T>[]; cursor: string | null }> {
  const iter = kv.list<T>({ prefix }, {
    limit: options.limit,
    cursor: options.cursor,
    reverse: options.reverse,
  });
  const entries: Deno.KvEntry<T>[] = [];
  try {
    for await (const entry of iter) entries.push(entry);
  } catch (error) {
    if (
      options.cursor !== undefined && error instanceof TypeError &&
      /cursor|key too large/i.test(error.message)
    ) {
      throw new InvalidCursorError(options.cursor);
    }
    throw error;
  }
  return { entries, cursor: entries.length === options.limit ? iter.cursor || null : null };
}
