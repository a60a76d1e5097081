/**
 * The scripted engine as a mixture-of-experts model (R3): the experts each MoE layer routes a
 * token to, a deterministic function of the token, its position, the layer and the computation
 * that forwarded it. A computation is an epoch: the engine's life (a revived engine is another)
 * and the weight version. A prompt's positions its prefix cache serves keep the epoch they were
 * computed in, as SGLang's capture buffers are indexed by KV slot; positions computed anew take
 * the current one. Recomputing under another epoch changes about one row in
 * {@linkcode RECOMPUTE_DRIFT}, as routers disagree between passes on real models. Dense layers
 * report zeros, as the engines do.
 *
 * @module
 */
import type { MoeShape } from "../engine/mod.ts";

/** One row in this many differs between two epochs' computations of the same position. */
export const RECOMPUTE_DRIFT = 16;

/** Positions `..end` computed in `epoch` (runs in order, each from the previous one's end). */
export interface EpochRun {
  readonly end: number;
  readonly epoch: string;
}

/** A 32-bit mix of integers (FNV-1a over their words, then a finalizer). */
function mix(...values: number[]): number {
  let hash = 0x811c9dc5;
  for (const value of values) {
    hash = Math.imul(hash ^ (value & 0xffff), 0x01000193);
    hash = Math.imul(hash ^ (value >>> 16), 0x01000193);
  }
  hash ^= hash >>> 15;
  hash = Math.imul(hash, 0x2c1b3c6d);
  hash ^= hash >>> 12;
  return hash >>> 0;
}

/** A 32-bit hash of an epoch's name. */
export function epochHash(epoch: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < epoch.length; i++) hash = Math.imul(hash ^ epoch.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/**
 * The rows of positions `from..to` of `sequence` (prompt ++ output), as int32 values, each
 * position's epoch read from `epochs`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scriptedRoutes } from "./_routes.ts";
 * const shape = { layers: 2, topK: 2, experts: 8, denseLayers: [0] };
 * const rows = scriptedRoutes(shape, [5, 6, 7], 0, 2, [{ end: 3, epoch: "a" }]);
 * assert.equal(rows.length, 2 * 2 * 2);
 * assert.deepEqual([...rows.slice(0, 2)], [0, 0]); // the dense layer
 * ```
 */
export function scriptedRoutes(
  shape: MoeShape,
  sequence: readonly number[],
  from: number,
  to: number,
  epochs: readonly EpochRun[],
): Int32Array {
  const width = shape.layers * shape.topK;
  const out = new Int32Array(Math.max(0, to - from) * width);
  const dense = new Set(shape.denseLayers);
  let run = 0;
  while (run < epochs.length - 1 && epochs[run].end <= from) run++;
  let epoch = epochHash(epochs[run]?.epoch ?? "");
  const chosen = new Int32Array(shape.topK);
  for (let position = from; position < to; position++) {
    while (run < epochs.length - 1 && epochs[run].end <= position) {
      epoch = epochHash(epochs[++run].epoch);
    }
    const token = sequence[position];
    // Which rows drift between epochs: a function of the position and the epoch.
    const drifts = mix(position, epoch) % RECOMPUTE_DRIFT === 0;
    for (let layer = 0; layer < shape.layers; layer++) {
      const at = (position - from) * width + layer * shape.topK;
      if (dense.has(layer)) continue;
      let seed = mix(token, position, layer, drifts ? epoch : 0);
      for (let k = 0; k < shape.topK; k++) {
        let expert = seed % shape.experts;
        // Experts of one layer are distinct: step past those already chosen.
        while (chosen.subarray(0, k).includes(expert)) expert = (expert + 1) % shape.experts;
        chosen[k] = expert;
        out[at + k] = expert;
        seed = mix(seed, k);
      }
    }
  }
  return out;
}

/** `runs` cut at `end` (the positions a prefix cache hit covers). */
export function epochsUpTo(runs: readonly EpochRun[], end: number): EpochRun[] {
  const cut: EpochRun[] = [];
  for (const run of runs) {
    if (end <= (cut.at(-1)?.end ?? 0)) break;
    cut.push({ end: Math.min(run.end, end), epoch: run.epoch });
  }
  return cut;
}

/** `runs` then positions `..end` in `epoch`. */
export function epochsThen(runs: readonly EpochRun[], end: number, epoch: string): EpochRun[] {
  const last = runs.at(-1);
  if ((last?.end ?? 0) >= end) return [...runs];
  if (last?.epoch === epoch) return [...runs.slice(0, -1), { end, epoch }];
  return [...runs, { end, epoch }];
}
