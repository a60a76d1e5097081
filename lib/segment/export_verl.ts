/**
 * verl's `AgentLoopOutput` (verl/experimental/agent_loop): `prompt_ids`, `response_ids`,
 * `response_mask`, `response_logprobs`, `reward_score`, `num_turns`, `metrics`, `extra_fields`.
 *
 * @module
 */
import type { SessionRecord } from "../kv/mod.ts";
import type { ChainSample } from "./samples.ts";

/** A verl agent-loop output, as JSON. */
export interface VerlSample {
  readonly prompt_ids: number[];
  readonly response_ids: number[];
  /** 1 on sampled tokens that are trained on, 0 on tool output and template tokens. */
  readonly response_mask: number[];
  readonly response_logprobs: number[];
  readonly reward_score: number | null;
  /** User and assistant turns of the chain: two per recorded turn. */
  readonly num_turns: number;
  readonly metrics: Record<string, number>;
  readonly extra_fields: Record<string, unknown>;
}

/**
 * A chain as a verl agent-loop output. Every chain of a session carries the session's score.
 *
 * @example
 * ```ts
 * toVerl(session, chain).response_mask.length === chain.arrays.response_ids.length; // true
 * ```
 */
export function toVerl(session: SessionRecord, chain: ChainSample): VerlSample {
  const { prompt_ids, response_ids, loss_mask, logprobs } = chain.arrays;
  const sum = (pick: (turn: ChainSample["turns"][number]) => number) =>
    chain.turns.reduce((total, turn) => total + pick(turn), 0);
  return {
    prompt_ids,
    response_ids,
    response_mask: loss_mask,
    response_logprobs: logprobs,
    reward_score: session.reward?.score ?? null,
    num_turns: 2 * chain.turns.length,
    metrics: {
      generate_sequences: sum((turn) => turn.timings.engineMs) / 1000,
      tool_calls: sum((turn) => turn.toolCalls),
      masked_turns: sum((turn) => turn.masked ? 1 : 0),
      ill_formed_turns: sum((turn) => turn.flags.includes("ill_formed") ? 1 : 0),
      engine_aborts: sum((turn) => turn.aborts),
    },
    extra_fields: {
      session_id: session.id,
      chain_id: chain.header.id,
      kind: chain.header.kind,
      finish_reason: chain.turns.at(-1)?.finishReason ?? null,
      weight_versions: [...new Set(chain.turns.flatMap((turn) => turn.weightVersions))],
      reward: session.reward,
    },
  };
}
