/**
 * A chain as training arrays: `prompt_ids ++ response_ids`, with `loss_mask` and `logprobs`
 * aligned to `response_ids` (docs/DESIGN.md §3).
 *
 * @module
 */
import type { DecodedTurnTokens } from "../kv/mod.ts";
import type { VersionSpan } from "../engine/mod.ts";
import { outputMask, outputVersionSpans, type TurnRecord } from "./records.ts";

/** A chain flattened for training. `response_ids`, `loss_mask` and `logprobs` are equally long. */
export interface ChainArrays {
  /** The first turn's prompt. */
  readonly prompt_ids: number[];
  /** Every later token: outputs, closing tokens and the deltas between turns. */
  readonly response_ids: number[];
  /** 1 where the token was sampled by the engine and is trained on; 0 elsewhere. */
  readonly loss_mask: number[];
  /** The engine's logprob where the token was sampled, 0 elsewhere. */
  readonly logprobs: number[];
  /**
   * The weight version of each sampled token, run-length over `response_ids` positions: every
   * position of a span was sampled under its version; positions in no span were not sampled.
   * Spans are in order and never cross a turn's boundary.
   */
  readonly version_spans: VersionSpan[];
}

/**
 * Flattens a chain's turns.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { flattenChain } from "./token_chain.ts";
 * import type { TurnRecord } from "./records.ts";
 * // A recorded turn, with only the fields flattening reads.
 * const record = { outputLen: 2, masked: false, weightVersions: ["7"] } as Partial<
 *   TurnRecord
 * > as TurnRecord;
 * const tokens = {
 *   delta: new Uint32Array([1, 2, 3]),
 *   output: new Uint32Array([10, 11]),
 *   logprobs: new Float64Array([-0.5, -0.25]),
 *   closing: new Uint32Array([99]),
 * };
 * const arrays = flattenChain([{ record, tokens }]);
 * assert.deepEqual(arrays.prompt_ids, [1, 2, 3]);
 * assert.deepEqual(arrays.response_ids, [10, 11, 99]);
 * assert.deepEqual(arrays.loss_mask, [1, 1, 0]);
 * ```
 */
export function flattenChain(
  turns: readonly { record: TurnRecord; tokens: DecodedTurnTokens }[],
): ChainArrays {
  const prompt_ids: number[] = [];
  const response_ids: number[] = [];
  const loss_mask: number[] = [];
  const logprobs: number[] = [];
  const version_spans: VersionSpan[] = [];
  const context = (ids: ArrayLike<number>) => {
    for (let i = 0; i < ids.length; i++) {
      response_ids.push(ids[i]);
      loss_mask.push(0);
      logprobs.push(0);
    }
  };
  turns.forEach(({ record, tokens }, index) => {
    if (index === 0) {
      // A loop, not a spread: a first prompt of 200k tokens would overflow the call stack.
      for (let i = 0; i < tokens.delta.length; i++) prompt_ids.push(tokens.delta[i]);
    } else {
      context(tokens.delta);
    }
    const at = response_ids.length;
    for (const span of outputVersionSpans(record)) {
      version_spans.push({ version: span.version, start: at + span.start, end: at + span.end });
    }
    const mask = outputMask(record);
    for (let i = 0; i < tokens.output.length; i++) {
      response_ids.push(tokens.output[i]);
      loss_mask.push(mask);
      logprobs.push(tokens.logprobs[i]);
    }
    context(tokens.closing);
  });
  return { prompt_ids, response_ids, loss_mask, logprobs, version_spans };
}
