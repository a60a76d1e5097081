/**
 * The scripted engine's prefix cache, as far as an engine reports it: each finished call's
 * sequence (prompt + output) is kept, the least recently used dropped past a bound (of sequences
 * and of tokens), and a new call's `cached_tokens` is the longest prefix of its prompt a kept
 * sequence of the same cache namespace (`cache_salt`) starts with, one short of the whole prompt
 * (an engine always computes the last prompt token). A sequence that a newer one extends is
 * dropped for it, as a radix tree holds a chain's turns as one path: the token bound counts each
 * chain's longest sequence once. No KV is simulated: only the count an engine reports.
 *
 * Sequences are compared as vLLM's prefix cache keys them: by chained hashes of fixed-size blocks
 * (each block's hash covers every token before it), so a long history costs one pass to hash and
 * a block-by-block walk per kept sequence, and only the last, partly shared block token by token.
 *
 * @module
 */
import { type EpochRun, epochsThen, epochsUpTo } from "./_routes.ts";

/** Sequences kept by default. */
export const PREFIX_CACHE_ENTRIES = 32;

/** Tokens kept by default: about what one GPU's KV cache holds for a mid-sized model. */
export const PREFIX_CACHE_TOKENS = 2_000_000;

/** Tokens per hashed block. */
const BLOCK = 64;

/** FNV-1a's offset basis: the hash before the first block. */
const SEED = 0x811c9dc5;

/**
 * A kept sequence: its prompt and output as they were (not copied), and the chained hash of each
 * whole block of them, computed only as far as a match walks (as an engine matches at prefill):
 * nothing runs once the call has answered, and a sequence that parts from a prompt early costs
 * the blocks they share.
 */
interface Entry {
  readonly salt: string;
  readonly prompt: readonly number[];
  readonly output: readonly number[];
  /** The computations that forwarded its positions (the MoE engine's routes depend on them). */
  readonly epochs: readonly EpochRun[];
  /** Block hashes computed so far (the prompt's, when its match computed them). */
  readonly blocks: number[];
}

/** Token `n` of `entry`'s sequence (prompt, then output). */
function tokenAt(entry: Entry, n: number): number {
  return n < entry.prompt.length ? entry.prompt[n] : entry.output[n - entry.prompt.length];
}

/** The hash of `entry`'s block `b`, hashing the blocks before it first; `null` past its end. */
function blockOf(entry: Entry, b: number): number | null {
  const length = entry.prompt.length + entry.output.length;
  const { blocks } = entry;
  while (blocks.length <= b && (blocks.length + 1) * BLOCK <= length) {
    let hash = blocks.at(-1) ?? SEED;
    for (let i = blocks.length * BLOCK; i < (blocks.length + 1) * BLOCK; i++) {
      hash = Math.imul(hash ^ tokenAt(entry, i), 0x01000193);
    }
    blocks.push(hash >>> 0);
  }
  return b < blocks.length ? blocks[b] : null;
}

/** The chained hash of each whole block of `ids`, the prompt of a match. */
function blockHashes(ids: readonly number[]): number[] {
  const blocks: number[] = [];
  let hash = SEED;
  for (let b = 0; (b + 1) * BLOCK <= ids.length; b++) {
    for (let i = b * BLOCK; i < (b + 1) * BLOCK; i++) hash = Math.imul(hash ^ ids[i], 0x01000193);
    blocks.push(hash >>> 0);
  }
  return blocks;
}

/** The tokens of `entry`'s sequence. */
function lengthOf(entry: Entry): number {
  return entry.prompt.length + entry.output.length;
}

/** Finished sequences, most recently used last. */
export class PrefixCache {
  readonly #entries: Entry[] = [];
  /** Tokens of the kept sequences. */
  #tokens = 0;
  /**
   * Each prompt matched whose call has not finished: its block hashes, for its sequence when the
   * call finishes, and the kept sequence it wholly extends (dropped when its own is kept).
   */
  #matched = new WeakMap<
    readonly number[],
    {
      readonly blocks: readonly number[];
      readonly extends: Entry | null;
      /** The epochs of the positions the match served. */
      readonly epochs: readonly EpochRun[];
    }
  >();

  constructor(
    readonly capacity = PREFIX_CACHE_ENTRIES,
    readonly capacityTokens = PREFIX_CACHE_TOKENS,
  ) {}

  /** Tokens the kept sequences hold. */
  get tokens(): number {
    return this.#tokens;
  }

  /** Forgets everything (the engine restarted). */
  clear(): void {
    this.#entries.length = 0;
    this.#tokens = 0;
    this.#matched = new WeakMap();
  }

  /**
   * Prompt tokens of `prompt` a kept sequence of namespace `salt` covers; the sequence found is
   * used again.
   */
  match(prompt: readonly number[], salt = ""): number {
    if (this.capacity === 0) return 0;
    const blocks = blockHashes(prompt);
    const limit = prompt.length - 1;
    let best = 0;
    let at = -1;
    let extended: Entry | null = null;
    for (let i = this.#entries.length - 1; i >= 0 && best < limit; i--) {
      const entry = this.#entries[i];
      if (entry.salt !== salt) continue;
      let b = 0;
      while (b < blocks.length && blocks[b] === blockOf(entry, b)) b++;
      let n = b * BLOCK;
      const end = Math.min(prompt.length, lengthOf(entry));
      while (n < end && tokenAt(entry, n) === prompt[n]) n++;
      if (n === lengthOf(entry)) extended = entry;
      if (Math.min(n, limit) > best) [best, at] = [Math.min(n, limit), i];
    }
    const epochs = at >= 0 ? epochsUpTo(this.#entries[at].epochs, best) : [];
    this.#matched.set(prompt, { blocks, extends: extended, epochs });
    if (at >= 0) this.#entries.push(...this.#entries.splice(at, 1));
    return best;
  }

  /**
   * The computations that forwarded the positions `match(prompt)` found cached, the positions
   * after them computed in `epoch`, up to `end`.
   */
  epochs(prompt: readonly number[], end: number, epoch: string): EpochRun[] {
    return epochsThen(this.#matched.get(prompt)?.epochs ?? [], end, epoch);
  }

  /**
   * Keeps a finished call's sequence, forwarded in `epochs` (by default all in one), dropping
   * the least recently used past the bound.
   */
  add(
    prompt: readonly number[],
    output: readonly number[],
    salt = "",
    epochs: readonly EpochRun[] = [],
  ): void {
    if (this.capacity === 0) return;
    const last = this.#matched.get(prompt);
    this.#matched.delete(prompt);
    const extended = last?.extends ? this.#entries.indexOf(last.extends) : -1;
    if (extended >= 0) this.#drop(extended);
    this.#entries.push({ salt, prompt, output, epochs, blocks: last ? [...last.blocks] : [] });
    this.#tokens += prompt.length + output.length;
    while (
      this.#entries.length > this.capacity ||
      (this.#tokens > this.capacityTokens && this.#entries.length > 1)
    ) this.#drop(0);
  }

  #drop(at: number): void {
    const [entry] = this.#entries.splice(at, 1);
    this.#tokens -= lengthOf(entry);
  }
}
