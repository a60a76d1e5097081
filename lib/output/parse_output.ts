/**
 * Turns the text of sampled tokens into what the agent receives (T6): thinking, text and tool
 * calls, in order. Parsing never fails: what cannot be a tool call stays text and is flagged.
 *
 * @module
 */
import { familyOf, QWEN } from "./families/mod.ts";
import { modelFamily, type ModelFormats } from "./model_family.ts";
import type { ToolSchemas } from "./qwen3_coder_parser.ts";
import type { OutputBlock, ParsedOutput } from "./output_blocks.ts";
import { splitReasoning } from "./reasoning_parser.ts";
import { type ParsedAnswer, parseToolCalls } from "./tool_parser.ts";

/** What the parser needs to know about the model and the request that produced the output. */
export interface ParseOptions {
  /** The prompt ended inside an open `<think>` block. */
  readonly startsInReasoning: boolean;
  /** The tools the request offered, with their parameter schemas when the format types values. */
  readonly tools: ToolSchemas;
  /** The model's output formats; Qwen3's (`qwen25` calls, `qwen3` reasoning) when left out. */
  readonly formats?: ModelFormats;
}

/** The formats of Qwen3, the default model. */
export const QWEN3: ModelFormats = { toolCallParser: "qwen25", reasoningParser: "qwen3" };

/**
 * Parses decoded model output (end-of-turn token already removed).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseOutput } from "./parse_output.ts";
 * assert.deepEqual(
 *   parseOutput("<think>\nlook\n</think>\n\nDone.", {
 *     startsInReasoning: false,
 *     tools: new Map(),
 *   }),
 *   {
 *     blocks: [{ type: "thinking", thinking: "look" }, { type: "text", text: "Done." }],
 *     illFormed: [],
 *   },
 * );
 * ```
 */
export function parseOutput(text: string, options: ParseOptions): ParsedOutput {
  const formats = options.formats ?? QWEN3;
  const output = modelFamily(formats).output;
  if (output.kind === "channels") return output.parse(text, toolNames(options.tools));
  const { reasoning, rest } = formats.reasoningParser === null
    ? { reasoning: null, rest: text }
    : splitReasoning(text, options.startsInReasoning, output.callsStart);
  const answer = output.parseAnswer(rest, options.tools, formats.toolCallParser);
  const blocks: OutputBlock[] = [];
  if (reasoning !== null && reasoning.length > 0) {
    blocks.push({ type: "thinking", thinking: reasoning });
  }
  blocks.push(...answer.parts);
  return { blocks, illFormed: answer.illFormed };
}

/**
 * The text and tool calls of an answer, in the tool-call format `parser` (hermes JSON for a
 * format whose output is not an answer after reasoning).
 */
export function parseAnswer(parser: string, text: string, tools: ToolSchemas): ParsedAnswer {
  const output = (familyOf(parser) ?? QWEN).output;
  return output.kind === "reasoned"
    ? output.parseAnswer(text, tools, parser)
    : parseToolCalls(text, toolNames(tools));
}

const toolNames = (tools: ToolSchemas): ReadonlySet<string> => new Set(tools.keys());
