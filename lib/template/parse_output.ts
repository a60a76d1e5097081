/**
 * Turns the text of sampled tokens into what the agent receives (T6): thinking, text and tool
 * calls, in order. Parsing never fails: what cannot be a tool call stays text and is flagged.
 *
 * @module
 */
import { parseGlmCalls } from "./glm_parser.ts";
import { parseHarmony } from "./harmony_parser.ts";
import type { ModelFormats } from "./model_family.ts";
import { parseQwen3CoderCalls, type ToolSchemas } from "./qwen3_coder_parser.ts";
import type { OutputBlock, ParsedOutput } from "./output_blocks.ts";
import { splitReasoning } from "./reasoning_parser.ts";
import { KIMI_K2_SECTION_BEGIN, parseDeepSeekV31Calls, parseKimiK2Calls } from "./section_calls.ts";
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
  // Harmony's channels carry reasoning, text and calls alike.
  if (formats.toolCallParser === "gpt-oss") return parseHarmony(text, toolNames(options.tools));
  const { reasoning, rest } = formats.reasoningParser === null
    ? { reasoning: null, rest: text }
    : splitReasoning(
      text,
      options.startsInReasoning,
      // Kimi K2's section of calls ends its reasoning as `<tool_call>` ends the others'.
      formats.reasoningParser === "kimi_k2" ? KIMI_K2_SECTION_BEGIN : undefined,
    );
  const answer = parseAnswer(formats.toolCallParser, rest, options.tools);
  const blocks: OutputBlock[] = [];
  if (reasoning !== null && reasoning.length > 0) {
    blocks.push({ type: "thinking", thinking: reasoning });
  }
  blocks.push(...answer.parts);
  return { blocks, illFormed: answer.illFormed };
}

/** The text and tool calls of an answer, in the tool-call format `parser`. */
export function parseAnswer(parser: string, text: string, tools: ToolSchemas): ParsedAnswer {
  switch (parser) {
    case "qwen3_coder":
      return parseQwen3CoderCalls(text, tools);
    case "deepseekv31":
      return parseDeepSeekV31Calls(text, toolNames(tools));
    case "glm":
    case "glm45":
      return parseGlmCalls(text, tools, "glm45");
    case "glm47":
      return parseGlmCalls(text, tools, "glm47");
    case "kimi_k2":
      return parseKimiK2Calls(text, toolNames(tools));
    default:
      return parseToolCalls(text, toolNames(tools));
  }
}

const toolNames = (tools: ToolSchemas): ReadonlySet<string> => new Set(tools.keys());
