/**
 * Reading a body no further than a limit, so a peer cannot make the gateway hold more than it
 * allows (a client's request, an environment's answer).
 *
 * @module
 */

/**
 * The bytes of `body`, or `null` (the stream cancelled) once it passes `limit` bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readCapped } from "./read_capped.ts";
 * // Five bytes is past a limit of four.
 * assert.equal(await readCapped(new Response("hello").body, 4), null);
 * assert.equal((await readCapped(new Response("hello").body, 5))?.length, 5);
 * ```
 */
export async function readCapped(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (body) {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > limit) return null; // leaving the loop cancels the stream
      chunks.push(chunk);
    }
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}
