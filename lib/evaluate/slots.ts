/**
 * A counting semaphore: at most `size` holders at once, the rest wait in arrival order.
 *
 * @module
 */

/**
 * Slots for work that must not all run at once (sandboxes on a two-core machine).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Slots } from "./slots.ts";
 * const slots = new Slots(2);
 * // The third waits until one of the first two is done.
 * const results = await Promise.all(
 *   [1, 2, 3].map((n) => slots.run(() => Promise.resolve(n * 10))),
 * );
 * assert.deepEqual(results, [10, 20, 30]);
 * ```
 */
export class Slots {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`Invalid slot count ${size}`);
    this.#free = size;
  }

  /** Holders waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Runs `work` in a slot; a caller whose `signal` aborts while it waits leaves the queue. */
  async run<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.#acquire(signal);
    try {
      return await work();
    } finally {
      this.#release();
    }
  }

  #acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", leave);
        resolve();
      };
      const leave = () => {
        const at = this.#waiting.indexOf(grant);
        if (at >= 0) this.#waiting.splice(at, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", leave, { once: true });
      this.#waiting.push(grant);
    });
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}
