/**
 * What every dialect's client does with the wire alike: a JSON request body around prompt ids
 * that are written where they are kept, and the message of an engine's error answer.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { Readable } from "node:stream";

/**
 * Bytes of prompt ids below which a request body is one copy. A long prompt's ids (1.5 MB at
 * 256k tokens) are written from where they are kept: measured here, one copied 1.5 MB body cost
 * 1.3–2.3 ms of CPU to send, three parts 0.7–1.0 ms; below ~100 KB the two are alike.
 */
const COPY_BELOW_BYTES = 64 * 1024;

/** A body of `parts` (the middle one the prompt's ids), and its length in bytes. */
export function requestBody(
  parts: readonly [Uint8Array, Uint8Array, Uint8Array],
): { body: Buffer | Readable; length: number } {
  const length = parts[0].length + parts[1].length + parts[2].length;
  // A long prompt's ids go out as they are, in a write of their own, not copied into one body.
  const body = parts[1].length < COPY_BELOW_BYTES ? Buffer.concat(parts) : Readable.from(parts);
  return { body, length };
}

/** The message of an engine's error answer (`{error: {message}}`, `{message}`, or its text). */
export function engineErrorMessage(text: string): string {
  try {
    const body = JSON.parse(text);
    return String(body?.error?.message ?? body?.message ?? text).slice(0, 500);
  } catch {
    return text.slice(0, 500);
  }
}
