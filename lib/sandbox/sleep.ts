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
 * await sleep(1000 * 2 ** attempt, request.signal); // a backoff the caller can cancel
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
