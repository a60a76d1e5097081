/**
 * A seeded pseudo-random generator for the fuzz test: the same seed gives the same requests, so
 * a failure found once is found again. Each case draws from its own generator, derived from the
 * run's seed and the case's index, so one case can be regenerated alone.
 *
 * @module
 */

/** sfc32 over four 32-bit words: small, fast and good enough for picking test inputs. */
export class Prng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  /** A generator whose draws are fixed by `seed` (and `stream`, to derive independent ones). */
  constructor(readonly seed: number, stream = 0) {
    this.#a = 0x9e3779b9 ^ seed;
    this.#b = 0x243f6a88 ^ Math.imul(stream + 1, 0x85ebca6b);
    this.#c = 0xb7e15162 ^ Math.imul(seed, 0xc2b2ae35);
    this.#d = 1;
    for (let i = 0; i < 15; i++) this.next();
  }

  /** A generator for case `index` of the run seeded `seed`. */
  static forCase(seed: number, index: number): Prng {
    return new Prng(seed, index);
  }

  /** A float in [0, 1). */
  next(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** An integer in [0, max). */
  int(max: number): number {
    return Math.floor(this.next() * max);
  }

  /** An integer in [min, max], biased towards small values (a log-uniform draw). */
  size(min: number, max: number): number {
    const span = Math.log(max - min + 1);
    return Math.min(max, min + Math.floor(Math.exp(this.next() * span)) - 1);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One element of `items`. */
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  /** One of `choices`, each weighted by its first element. */
  weighted<T>(choices: readonly (readonly [number, T])[]): T {
    const total = choices.reduce((sum, [weight]) => sum + weight, 0);
    let at = this.next() * total;
    for (const [weight, value] of choices) {
      at -= weight;
      if (at < 0) return value;
    }
    return choices[choices.length - 1][1];
  }
}

/** The seed of a run that names none: CI replays the same cases, so a red run is a real bug. */
export const DEFAULT_SEED = 20261123;

/**
 * The run's seed: `FUZZ_SEED` when set (a number, to replay a failure, or `random` to explore
 * fresh cases), else {@linkcode DEFAULT_SEED}.
 */
export function runSeed(): number {
  const given = Deno.env.get("FUZZ_SEED");
  if (given !== undefined && /^\d+$/.test(given)) return Number(given) >>> 0;
  if (given === "random") return crypto.getRandomValues(new Uint32Array(1))[0];
  return DEFAULT_SEED;
}
