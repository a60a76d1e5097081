/**
 * How a background task (a sweep, a metrics snapshot, a rollout scan) reports a failure: a store
 * that did not answer — a database restarting, which the task outlives and tries again — as one
 * line; anything else whole, with its stack, since it may be a bug.
 *
 * @module
 */
import { codeOf } from "./codes.ts";

/**
 * Logs `error`, which stopped the background task `what` this time.
 *
 * @example
 * ```ts
 * import { logBackgroundFailure } from "./background.ts";
 * const unavailable = Object.assign(new Error("connect ECONNREFUSED"), {
 *   code: "store_unavailable",
 * });
 * logBackgroundFailure("Sweep", unavailable); // "Sweep: the store is unavailable (…); trying again"
 * ```
 */
export function logBackgroundFailure(what: string, error: unknown): void {
  if (codeOf(error) === "store_unavailable") {
    console.warn(`${what}: the store is unavailable (${(error as Error).message}); trying again`);
  } else {
    console.error(`${what} failed:`, error);
  }
}
