/**
 * What a finished generation becomes in a chain: how it ended, the tokens that close it, and
 * whether its sampled tokens are trained on.
 *
 * @module
 */
import type { EngineFinish } from "../engine/mod.ts";
import type { FinishReason } from "./records.ts";

/** How a turn ended, with the stop string when one matched. */
export interface TurnEnd {
  readonly reason: FinishReason;
  readonly stopSequence: string | null;
}

/** Reads the engine's finish reason. Any stop token counts as the end of the turn. */
export function turnEnd(finish: EngineFinish): TurnEnd {
  if (finish.type === "length") return { reason: "length", stopSequence: null };
  if (typeof finish.matched === "string") {
    return { reason: "stop_sequence", stopSequence: finish.matched };
  }
  return { reason: "end_of_turn", stopSequence: null };
}

/**
 * Tokens appended after the output so the next turn's delta follows the end of a turn (T5):
 * none when the model ended it (a stop token, or the closing token itself), otherwise the
 * closing token, with mask 0.
 */
export function closingTokens(
  output: readonly number[],
  ending: { readonly stopIds: readonly number[]; readonly closeId: number },
): number[] {
  const last = output.at(-1);
  if (last === ending.closeId || (last !== undefined && ending.stopIds.includes(last))) return [];
  return [ending.closeId];
}

/** `output` without the stop token that ended it, if one did: the tokens the agent reads. */
export function withoutStopToken(
  output: readonly number[],
  stopIds: readonly number[],
): readonly number[] {
  const last = output.at(-1);
  return last !== undefined && stopIds.includes(last) ? output.slice(0, -1) : output;
}

/**
 * True when `output` survives decode → encode unchanged. An output that does not would be
 * tokenized differently by anyone re-tokenizing its text (T5).
 */
export function survivesRoundTrip(
  output: readonly number[],
  codec: { decode(ids: ArrayLike<number>): string; encode(text: string): number[] },
): boolean {
  const again = codec.encode(codec.decode(output));
  return again.length === output.length && again.every((token, i) => token === output[i]);
}
