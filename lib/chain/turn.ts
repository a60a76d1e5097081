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
  ending: { readonly stopIds: readonly number[]; readonly closeId: number | null },
): number[] {
  const last = output.at(-1);
  if (ending.closeId === null) return [];
  if (last === ending.closeId || (last !== undefined && ending.stopIds.includes(last))) return [];
  return [ending.closeId];
}

/**
 * The tokens of a delta to append to a chain whose last token is `last`: all of them, or all but
 * the first when the chain ends with that same token as a sampled stop token. A family whose
 * model ends its turn by sampling the next message's role marker (GLM's `<|observation|>`,
 * `<|user|>`) has already written the marker the template starts the delta with (T3).
 */
export function deltaAfter(
  last: number | undefined,
  delta: number[],
  stopIds: readonly number[],
): number[] {
  return last !== undefined && delta[0] === last && stopIds.includes(last) ? delta.slice(1) : delta;
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
