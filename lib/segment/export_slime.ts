/**
 * slime's `Sample` (slime/utils/types.py): `tokens` = prompt + response, `response_length`,
 * `loss_mask` and `rollout_log_probs` over the response, `reward`, `status`, `metadata`.
 *
 * @module
 */
import type { SessionRecord } from "../kv/mod.ts";
import type { ChainSample } from "./samples.ts";

/** A slime sample, as JSON. */
export interface SlimeSample {
  readonly tokens: number[];
  readonly response_length: number;
  /** 1 where the token was sampled and is trained on, over the response. */
  readonly loss_mask: number[];
  /** The engine's logprob of each response token (0 where it did not sample). */
  readonly rollout_log_probs: number[];
  /** The session's score, or `null` before a reward was set. */
  readonly reward: number | null;
  /** `completed`, or `truncated` when the last turn was cut by max_tokens. */
  readonly status: "completed" | "truncated";
  readonly metadata: Record<string, unknown>;
}

/**
 * A chain as a slime sample. Every chain of a session carries the session's score.
 *
 * @example
 * ```ts
 * const sample = toSlime(session, chain);
 * sample.tokens.length === sample.response_length + chain.arrays.prompt_ids.length; // true
 * ```
 */
export function toSlime(session: SessionRecord, chain: ChainSample): SlimeSample {
  const { prompt_ids, response_ids, loss_mask, logprobs } = chain.arrays;
  return {
    tokens: [...prompt_ids, ...response_ids],
    response_length: response_ids.length,
    loss_mask,
    rollout_log_probs: logprobs,
    reward: session.reward?.score ?? null,
    status: chain.turns.at(-1)?.finishReason === "length" ? "truncated" : "completed",
    metadata: {
      session_id: session.id,
      chain_id: chain.header.id,
      kind: chain.header.kind,
      turns: chain.turns.length,
      weight_versions: [...new Set(chain.turns.flatMap((turn) => turn.weightVersions))],
      reward: session.reward,
      session_metadata: session.metadata,
    },
  };
}
