/**
 * What both sides of an engine request share (the caller's thread and the engine HTTP worker):
 * a JSON body written around a prompt's ids as undici sends it, and the error past the timeout.
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

/** The body of `parts` (the middle one a prompt's ids): one copy, or long ids in a write of their own. */
export function requestBody(parts: readonly Uint8Array[]): Buffer | Readable {
  return (parts[1]?.length ?? 0) < COPY_BELOW_BYTES ? Buffer.concat(parts) : Readable.from(parts);
}

/** The code of the error a request fails with past its pool's timeout. */
export const TIMEOUT_CODE = "ENGINE_TIMEOUT";

/** Whether `error` is a request's failure past its pool's timeout. */
export function isTransportTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === TIMEOUT_CODE;
}

/** The error a request fails with past `ms`. */
export function transportTimeout(ms: number): Error {
  const error = new Error(`No answer within ${ms} ms`) as Error & { code: string };
  error.name = "TimeoutError";
  error.code = TIMEOUT_CODE;
  return error;
}
