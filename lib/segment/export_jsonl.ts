/**
 * xtuner-style trajectory records: one JSON object per line, with the lengths, the raw prompt
 * text, the reward payload, the finish reason and the tool turns beside the token arrays.
 *
 * @module
 */
import type { SessionRecord } from "../kv/mod.ts";
import type { ChatTokenizer } from "../template/mod.ts";
import type { ChainSample } from "./samples.ts";

/** One line of the JSONL export. */
export interface JsonlRecord {
  readonly session_id: string;
  readonly chain_id: string;
  readonly kind: string;
  readonly prompt_len: number;
  readonly response_len: number;
  /** The first turn's prompt as text (the template's rendering). */
  readonly raw_prompt: string;
  readonly reward: SessionRecord["reward"];
  readonly finish_reason: string | null;
  /** Turns whose reply called at least one tool. */
  readonly tool_turns: number;
  readonly prompt_ids: number[];
  readonly response_ids: number[];
  readonly loss_mask: number[];
  readonly logprobs: number[];
}

/**
 * A chain as a JSONL record.
 *
 * @example
 * ```ts
 * const line = JSON.stringify(toJsonl(session, chain, tokenizer));
 * ```
 */
export function toJsonl(
  session: SessionRecord,
  chain: ChainSample,
  tokenizer: Pick<ChatTokenizer, "decode">,
): JsonlRecord {
  const { prompt_ids, response_ids, loss_mask, logprobs } = chain.arrays;
  return {
    session_id: session.id,
    chain_id: chain.header.id,
    kind: chain.header.kind,
    prompt_len: prompt_ids.length,
    response_len: response_ids.length,
    raw_prompt: tokenizer.decode(prompt_ids),
    reward: session.reward,
    finish_reason: chain.turns.at(-1)?.finishReason ?? null,
    tool_turns: chain.turns.filter((turn) => turn.toolCalls > 0).length,
    prompt_ids,
    response_ids,
    loss_mask,
    logprobs,
  };
}
