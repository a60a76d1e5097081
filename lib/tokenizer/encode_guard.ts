/**
 * A watch over a long encode. Encoding runs a batch of pre-tokenized pieces at a time (their
 * tokens are the same as all at once: byte-pair merges never cross a piece), and after each batch
 * the guard is told how many tokens it added; it stops the encode, by throwing, once the tokens
 * pass a budget (the prompt cannot fit, whatever the rest) or the work is no longer wanted (the
 * client left).
 *
 * @module
 */

import type { CodedError } from "../errors/mod.ts";

/** Pieces encoded between two looks of a guard: a few milliseconds of work at most. */
export const GUARD_BATCH_PIECES = 2048;

/** An encode stopped because its tokens passed the budget: `tokens` so far, more to come. */
export class OverBudgetError extends Error {
  constructor(readonly tokens: number, readonly budget: number) {
    super(`Encoding stopped: more than ${tokens} tokens, ${budget} at most`);
    this.name = "OverBudgetError";
  }
}

/** An encode stopped because nobody waits for it any more (its client left). */
export class EncodeCancelledError extends Error implements CodedError {
  readonly code = "client_disconnected" as const;
  constructor() {
    super("Encoding stopped: cancelled");
    this.name = "EncodeCancelledError";
  }
}

/**
 * Counts an encode's tokens against `budget` and asks `cancelled` between batches.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EncodeGuard, OverBudgetError } from "./encode_guard.ts";
 * const guard = new EncodeGuard(10, () => false);
 * guard.add(6);
 * assert.throws(() => guard.add(6), OverBudgetError);
 * assert.equal(guard.tokens, 12);
 * ```
 */
export class EncodeGuard {
  #tokens = 0;
  #allowed = 0;

  constructor(readonly budget: number, private readonly cancelled: () => boolean) {}

  /** Tokens counted so far, less those {@linkcode EncodeGuard.allow} let through. */
  get tokens(): number {
    return this.#tokens - this.#allowed;
  }

  /**
   * Lets `count` more tokens through that the budget is not for: tokens an encode counts but
   * does not give (a delta's anchor, cut off after).
   */
  allow(count: number): void {
    this.#allowed += count;
  }

  /**
   * Stops the encode now when `count` more tokens, known to come, would pass the budget: a
   * look ahead at work that cannot be counted as it goes (one enormous piece).
   *
   * @throws {OverBudgetError} with the tokens counted and foreseen.
   */
  foresee(count: number): void {
    if (this.tokens + count > this.budget) {
      throw new OverBudgetError(this.tokens + count, this.budget);
    }
  }

  /**
   * Counts `count` more tokens.
   *
   * @throws {OverBudgetError} past the budget; {EncodeCancelledError} when no longer wanted.
   */
  add(count: number): void {
    this.#tokens += count;
    if (this.tokens > this.budget) throw new OverBudgetError(this.tokens, this.budget);
    if (this.cancelled()) throw new EncodeCancelledError();
  }
}
