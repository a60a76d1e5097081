/**
 * verl's `AgentLoopOutput` (verl/experimental/agent_loop): `prompt_ids`, `response_ids`,
 * `response_mask`, `response_logprobs`, `reward_score`, `num_turns`, `metrics`, `extra_fields`.
 *
 * @module
 */
import type { RewardedSession } from "../session/mod.ts";
import type { TrainingSegment } from "./allocate_reward.ts";
import { segmentIdentity } from "./samples.ts";

/** A verl agent-loop output, as JSON. */
export interface VerlSample {
  readonly prompt_ids: number[];
  readonly response_ids: number[];
  /** 1 on sampled tokens that are trained on, 0 on tool output and template tokens. */
  readonly response_mask: number[];
  readonly response_logprobs: number[];
  readonly reward_score: number | null;
  /** User and assistant turns of the segment: two per recorded turn. */
  readonly num_turns: number;
  readonly metrics: Record<string, number>;
  /**
   * Segment kind, lineage, rollout and group ids, stats, each response token's weight version
   * (`version_spans`), the reward payload.
   */
  readonly extra_fields: Record<string, unknown>;
}

/**
 * A segment as a verl agent-loop output.
 *
 * @example
 * ```ts
 * toVerl(session, segment).response_mask.length === segment.arrays.response_ids.length; // true
 * ```
 */
export function toVerl(session: RewardedSession, segment: TrainingSegment): VerlSample {
  const { prompt_ids, response_ids, loss_mask, logprobs, version_spans } = segment.arrays;
  const { stats } = segment;
  return {
    prompt_ids,
    response_ids,
    response_mask: loss_mask,
    response_logprobs: logprobs,
    reward_score: segment.reward,
    num_turns: 2 * stats.turns,
    metrics: {
      generate_sequences: segment.turns.reduce((sum, turn) => sum + turn.timings.engineMs, 0) /
        1000,
      tool_calls: segment.turns.reduce((sum, turn) => sum + turn.toolCalls, 0),
      masked_turns: stats.masked_turns,
      ill_formed_turns: stats.ill_formed_turns,
      engine_aborts: stats.aborts,
    },
    extra_fields: {
      ...segmentIdentity(session, segment),
      version_spans,
      reward_payload: session.reward,
    },
  };
}
