/**
 * Waiting for a condition another process will make true: KV has no cross-process watch, so a
 * waiter looks again at a fixed interval until the condition holds or its deadline passes.
 *
 * @module
 */
import { sleep } from "./sleep.ts";

/** How {@linkcode pollUntil} waits. */
export interface PollOptions {
  /** Longest wait, in milliseconds; the condition is checked once more when it ends. */
  readonly timeoutMs: number;
  /** Pause between checks, in milliseconds. */
  readonly intervalMs: number;
  /** The clock deadlines are measured on (a test's fake one). */
  readonly now?: () => number;
  /** Stops waiting: the wait rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/**
 * Checks `holds` until it is true (resolving `true`) or `timeoutMs` has passed (resolving
 * `false`); it is always checked at least once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pollUntil } from "./poll_until.ts";
 * let checks = 0;
 * assert.equal(await pollUntil(() => ++checks === 3, { timeoutMs: 1000, intervalMs: 1 }), true);
 * assert.equal(await pollUntil(() => false, { timeoutMs: 5, intervalMs: 1 }), false);
 * ```
 */
export async function pollUntil(
  holds: () => boolean | Promise<boolean>,
  options: PollOptions,
): Promise<boolean> {
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutMs;
  for (;;) {
    if (await holds()) return true;
    if (now() >= deadline) return false;
    await sleep(options.intervalMs, options.signal);
  }
}
