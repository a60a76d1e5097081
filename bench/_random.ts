/**
 * A seeded pseudo-random source, so a soak's choices (faults, sizes, kill times) can be told by
 * its seed.
 *
 * @module
 */

/** Numbers drawn from one seed. */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  between(min: number, max: number): number;
  /** One of `items`. */
  pick<T>(items: readonly T[]): T;
}

/**
 * A mulberry32 generator: fast, 32-bit state, good enough to spread test choices.
 *
 * @example
 * ```ts
 * const random = seeded(42);
 * random.between(1, 6); // the same die roll for the same seed
 * ```
 */
export function seeded(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    between: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)],
  };
}
