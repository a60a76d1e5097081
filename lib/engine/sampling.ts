/**
 * SGLang `sampling_params` for one generation (reference sglang.md §1.2). Only SGLang's own key
 * names are sent: an unknown key is a 500 on the engine.
 *
 * @module
 */

/** The `sampling_params` object of a `/generate` call. */
export interface SamplingParams {
  readonly max_new_tokens: number;
  readonly temperature?: number;
  readonly top_p?: number;
  readonly top_k?: number;
  readonly stop?: readonly string[];
  /** Deterministic sampling with this seed. */
  readonly sampling_seed?: number;
  /** Extra stop ids: the template's end-of-turn token, whatever the engine's EOS setting. */
  readonly stop_token_ids: readonly number[];
  /** Always false: special tokens are part of what the gateway parses. */
  readonly skip_special_tokens: false;
  /** Always true: a matched stop string stays in `text`, as it stays in `output_ids`. */
  readonly no_stop_trim: true;
  readonly spaces_between_special_tokens: false;
}

/** What a client asked for, protocol-neutral. */
export interface SamplingRequest {
  readonly maxTokens: number;
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly stop?: readonly string[];
  readonly seed?: number;
}

/**
 * `maxTokens` for a request that sets no limit (OpenAI's APIs make it optional): as many tokens as
 * the context has left, since {@linkcode samplingParams} clamps it to that.
 */
export const UNTIL_CONTEXT_ENDS = Number.MAX_SAFE_INTEGER;

/**
 * Sampling parameters for a prompt of `promptLength` tokens: `max_new_tokens` is the client's
 * `max_tokens` clamped to the context left.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { samplingParams } from "./sampling.ts";
 * const params = samplingParams(
 *   { maxTokens: 4096 },
 *   { promptLength: 30_000, contextLength: 32_768, stopIds: [151645] },
 * );
 * assert.equal(params.max_new_tokens, 2768); // what the context has left
 * ```
 */
export function samplingParams(
  request: SamplingRequest,
  limits: { promptLength: number; contextLength: number; stopIds: readonly number[] },
): SamplingParams {
  const left = Math.max(0, limits.contextLength - limits.promptLength);
  return {
    max_new_tokens: Math.min(request.maxTokens, left),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.topP === undefined ? {} : { top_p: request.topP }),
    ...(request.topK === undefined ? {} : { top_k: request.topK }),
    ...(request.stop && request.stop.length > 0 ? { stop: request.stop } : {}),
    ...(request.seed === undefined ? {} : { sampling_seed: request.seed }),
    stop_token_ids: [...limits.stopIds],
    skip_special_tokens: false,
    no_stop_trim: true,
    spaces_between_special_tokens: false,
  };
}
