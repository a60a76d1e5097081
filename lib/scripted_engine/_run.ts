/**
 * A call producing tokens, as the engine's controls see it: something to stop, and the finish
 * reason a stop ends it with.
 *
 * @module
 */

/** A call producing tokens. */
export interface Run {
  stopped: boolean;
  /** The finish reason a stop ends the call with. */
  abortedAs: Record<string, unknown>;
  /** Times a `retract` pause took the call off the engine while it had output. */
  retractions: number;
  stop(as?: Record<string, unknown>): void;
  /** The call has returned: it no longer runs. */
  done(): void;
}

/** The finish reason of a generation aborted while it ran. */
export const ABORTED = { type: "abort", message: "Aborted", status_code: null, err_type: null };
