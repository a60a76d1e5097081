/**
 * A recorded turn's output as the agent read it: parsed from the sampled tokens the same way
 * every time, so a replay, or a look back for the tool call that dispatched a sub-agent, sees
 * exactly what the client saw.
 *
 * @module
 */
import type { TurnEnd } from "../chain/mod.ts";
import { type ChatTokenizer, type ParsedOutput, parseOutput } from "../template/mod.ts";

/**
 * Parses what the agent reads: the output without its end-of-turn token or matched stop string.
 *
 * @example
 * ```ts
 * parseTurnOutput(tokenizer, output, { reason: "end_of_turn", stopSequence: null }, false, ["Bash"]);
 * ```
 */
export function parseTurnOutput(
  tokenizer: ChatTokenizer,
  output: readonly number[],
  end: TurnEnd,
  startsInReasoning: boolean,
  toolNames: readonly string[],
): ParsedOutput {
  const sampled = output.at(-1) === tokenizer.eosId ? output.slice(0, -1) : output;
  let text = tokenizer.decode(sampled);
  if (end.stopSequence !== null) {
    const at = text.lastIndexOf(end.stopSequence);
    if (at >= 0) text = text.slice(0, at);
  }
  return parseOutput(text, { startsInReasoning, toolNames: new Set(toolNames) });
}
