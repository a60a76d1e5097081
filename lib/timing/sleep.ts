/**
 * A wait that a caller who gives up can cut short.
 *
 * @module
 */

/**
 * Resolves after `ms`, or rejects with the signal's reason when it aborts first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sleep } from "./sleep.ts";
 * const controller = new AbortController();
 * const backoff = sleep(60_000, controller.signal); // a backoff the caller can cancel
 * controller.abort(new Error("client left"));
 * await assert.rejects(backoff, { message: "client left" });
 * ```
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    if (signal?.aborted) return abort();
    signal?.addEventListener("abort", abort, { once: true });
  });
}
