/**
 * Reading a body no further than a limit, so a peer cannot make the gateway hold more than it
 * allows (a client's request, an environment's answer).
 *
 * @module
 */

/**
 * The bytes of `body`, or `null` (the stream cancelled) once it passes `limit` bytes. When
 * `signal` aborts, the stream is cancelled and the read rejects with the signal's reason.
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
  signal?: AbortSignal,
): Promise<Uint8Array | null> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  // Cancelling ends a read that is waiting for the peer.
  const stop = () => reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener("abort", stop, { once: true });
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      signal?.throwIfAborted();
      if (done) break;
      size += value.length;
      if (size > limit) {
        await reader.cancel();
        return null;
      }
      chunks.push(value);
    }
  } finally {
    signal?.removeEventListener("abort", stop);
  }
  if (chunks.length === 1) return chunks[0];
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}
