/**
 * The wait before a retry: exponential in the attempt, capped, with jitter in [½, 1½) of it so
 * many callers failing together do not come back together. One formula for every retry of the
 * gateway (a rollout's attempt, a sandbox's boot, E2B's create).
 *
 * @module
 */

/**
 * Milliseconds to wait before attempt `attempt + 1` after `attempt` failures (1 for the first):
 * `baseMs × 2^(attempt−1)`, at most `maxMs`, times `0.5 + random` (`random` in [0, 1)), rounded.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { backoffMs } from "./backoff.ts";
 * assert.equal(backoffMs(1, 1000, 0.5), 1000);
 * assert.equal(backoffMs(3, 1000, 0.5), 4000);
 * assert.equal(backoffMs(20, 1000, 0, 30_000), 15_000);
 * ```
 */
export function backoffMs(
  attempt: number,
  baseMs: number,
  random: number = Math.random(),
  maxMs = Infinity,
): number {
  const exponential = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential * (0.5 + random));
}
