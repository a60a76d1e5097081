/**
 * The output record the families that reason in `<think>` blocks share (all but gpt-oss): the
 * reasoning split off as SGLang's `<think>` reasoning parsers split it, then the answer read by the
 * family's own tool-call parser, whole and streamed.
 *
 * @module
 */
import type { AnswerFormat, OutputFormat, OutputOptions } from "./family.ts";
import type { OutputBlock, ParsedOutput } from "./output_blocks.ts";
import { splitReasoning } from "./reasoning_parser.ts";
import { streamReasoned } from "./reasoned_stream.ts";

/**
 * The output of a family whose answer is written as `answer` says, after `<think>` reasoning when
 * the served formats name a reasoning parser.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TAGGED_CALLS } from "./family.ts";
 * import { reasonedOutput } from "./reasoned_output.ts";
 * import { parseToolCalls } from "./tool_parser.ts";
 * const output = reasonedOutput({
 *   parseAnswer: (text, tools) => parseToolCalls(text, new Set(tools.keys())),
 *   regions: TAGGED_CALLS,
 *   callsStart: "<tool_call>",
 * });
 * const options = {
 *   startsInReasoning: false,
 *   tools: new Map(),
 *   formats: { toolCallParser: "qwen25", reasoningParser: "qwen3" },
 * };
 * assert.deepEqual(output.parse("<think>\nlook\n</think>\n\nDone.", options), {
 *   blocks: [{ type: "thinking", thinking: "look" }, { type: "text", text: "Done." }],
 *   illFormed: [],
 * });
 * const stream = output.stream(options);
 * assert.deepEqual([...stream.push("<think>\nlook\n</think>\n\nDone."), ...stream.end()], [
 *   { type: "thinking", index: 0, thinking: "look" },
 *   { type: "text", index: 1, text: "Done." },
 * ]);
 * ```
 */
export function reasonedOutput(answer: AnswerFormat): OutputFormat {
  return {
    parse: (text, options) => parseReasoned(text, options, answer),
    stream: (options) => streamReasoned(options, answer),
  };
}

function parseReasoned(text: string, options: OutputOptions, answer: AnswerFormat): ParsedOutput {
  const { reasoning, rest } = options.formats.reasoningParser === null
    ? { reasoning: null, rest: text }
    : splitReasoning(text, options.startsInReasoning, answer.callsStart);
  const parsed = answer.parseAnswer(rest, options.tools, options.formats.toolCallParser);
  const blocks: OutputBlock[] = [];
  if (reasoning !== null && reasoning.length > 0) {
    blocks.push({ type: "thinking", thinking: reasoning });
  }
  blocks.push(...parsed.parts);
  return { blocks, illFormed: parsed.illFormed };
}
