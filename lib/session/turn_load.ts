/**
 * How many turns this process runs now, from the start of their routing to the end of their
 * recording (or their refusal): what tells whether other turns need the event loop, so a small
 * text is encoded where it is only when none do (`adaptiveEncoder`).
 *
 * @module
 */

/**
 * A count of running turns.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TurnLoad } from "./turn_load.ts";
 * const load = new TurnLoad();
 * const leave = load.enter();
 * assert.equal(load.running, 1);
 * leave();
 * leave(); // once only
 * assert.equal(load.running, 0);
 * ```
 */
export class TurnLoad {
  #running = 0;

  /** Turns running now. */
  get running(): number {
    return this.#running;
  }

  /** Counts a turn in; the function returned counts it out, once whatever the calls. */
  enter(): () => void {
    this.#running++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.#running--;
    };
  }
}
