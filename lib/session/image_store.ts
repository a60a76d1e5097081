/**
 * A session's images in KV: the bytes of every image its turns showed a vision model, kept once
 * per session by digest (an agent resends its history's images every turn), so a trainer can
 * fetch what the exports name (`GET /sessions/:id/images/:digest`) and rebuild the exact inputs.
 * Deleted with the session.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type { TurnImage } from "../chain/mod.ts";
import { keys, readBytes, type Store, writeBytes } from "../kv/mod.ts";
import { ImageNotFoundError } from "./errors.ts";
import { liveSession } from "./lifecycle.ts";

/** What a session keeps of an image beside its bytes. */
interface ImageHeader {
  readonly mediaType: string;
  readonly bytes: number;
  readonly chunks: number;
}

/**
 * Writes the images a turn added that the session does not hold yet: the chunks first, then the
 * header, so a header read means the bytes are all there. `data` holds their base64 by digest.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readImage, writeImages } from "./image_store.ts";
 * const kv = await Deno.openKv(":memory:");
 * const image = { digest: "d1", mediaType: "image/gif", width: 1, height: 1, bytes: 3, start: 0, length: 4 };
 * await writeImages(kv, "s1", [image], new Map([["d1", "R0lG"]]));
 * const read = await readImage(kv, "s1", "d1");
 * assert.equal(read?.mediaType, "image/gif");
 * assert.deepEqual([...read!.bytes], [0x47, 0x49, 0x46]);
 * assert.equal(await readImage(kv, "s1", "d2"), null);
 * kv.close();
 * ```
 */
export async function writeImages(
  kv: Store,
  sessionId: string,
  images: readonly TurnImage[],
  data: ReadonlyMap<string, string>,
): Promise<void> {
  for (const image of images) {
    const base64 = data.get(image.digest);
    const key = keys.image(sessionId, image.digest);
    if (base64 === undefined || (await kv.get(key)).value !== null) continue;
    const bytes = Buffer.from(base64, "base64");
    const chunks = await writeBytes(kv, key, bytes);
    const header: ImageHeader = { mediaType: image.mediaType, bytes: bytes.length, chunks };
    await kv.set(key, header);
  }
}

/** An image of the session by digest, or `null` when it holds none such. */
export async function readImage(
  kv: Store,
  sessionId: string,
  digest: string,
): Promise<{ mediaType: string; bytes: Uint8Array } | null> {
  const key = keys.image(sessionId, digest);
  const header = (await kv.get<ImageHeader>(key)).value;
  if (header === null) return null;
  return { mediaType: header.mediaType, bytes: await readBytes(kv, key, header.chunks) };
}

/** An image's identity as the exports name it: 64 hex digits. */
const DIGEST = /^[0-9a-f]{64}$/;

/**
 * An image of a live session, for a trainer rebuilding a sample's inputs.
 *
 * @throws {SessionNotFoundError}; {ImageNotFoundError} for a digest the session holds no image of.
 */
export async function sessionImage(
  kv: Store,
  sessionId: string,
  digest: string,
): Promise<{ mediaType: string; bytes: Uint8Array }> {
  await liveSession(kv, sessionId);
  const image = DIGEST.test(digest) ? await readImage(kv, sessionId, digest) : null;
  if (image === null) throw new ImageNotFoundError(sessionId, digest);
  return image;
}
