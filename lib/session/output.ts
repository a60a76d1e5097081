/**
 * A recorded turn's output as the agent read it: parsed from the sampled tokens the same way
 * every time, so a replay, or a look back for the tool call that dispatched a sub-agent, sees
 * exactly what the client saw.
 *
 * @module
 */
import { type TurnEnd, withoutStopToken } from "../chain/mod.ts";
import { type ParsedOutput, parseOutput, type ToolSchemas } from "../output/mod.ts";
import type { ChatTokenizer } from "../tokenizer/mod.ts";

/** What reading an output back takes of a tokenizer. */
export type OutputTokenizer = Pick<ChatTokenizer, "decode" | "ending" | "formats">;

/** Tools known by name only (a recorded turn's): every parameter value stays text. */
export function untypedTools(names: readonly string[]): ToolSchemas {
  return new Map(names.map((name) => [name, undefined]));
}

/**
 * Parses what the agent reads: the output without the stop token that ended it or a matched stop
 * string.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { loadTokenizer } from "../tokenizer/mod.ts";
 * import { parseTurnOutput, untypedTools } from "./output.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * const output = tokenizer.encode("<think>\nlook\n</think>\n\nDone.<|im_end|>");
 * const end = { reason: "end_of_turn" as const, stopSequence: null };
 * const parsed = parseTurnOutput(tokenizer, output, end, false, untypedTools(["Bash"]));
 * assert.deepEqual(parsed.blocks, [{ type: "thinking", thinking: "look" }, {
 *   type: "text",
 *   text: "Done.",
 * }]);
 * ```
 */
export function parseTurnOutput(
  tokenizer: OutputTokenizer,
  output: readonly number[],
  end: TurnEnd,
  startsInReasoning: boolean,
  tools: ToolSchemas,
): ParsedOutput {
  return parseOutput(turnText(tokenizer, output, end), {
    startsInReasoning,
    tools,
    formats: tokenizer.formats,
  });
}

/** The text the agent's reply is parsed from: the output less its stop token and stop string. */
export function turnText(
  tokenizer: OutputTokenizer,
  output: readonly number[],
  end: TurnEnd,
): string {
  const text = tokenizer.decode(withoutStopToken(output, tokenizer.ending.stopIds));
  if (end.stopSequence === null) return text;
  const at = text.lastIndexOf(end.stopSequence);
  return at >= 0 ? text.slice(0, at) : text;
}
