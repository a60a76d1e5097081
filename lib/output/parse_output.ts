/**
 * Turns the text of sampled tokens into what the agent receives (T6): thinking, text and tool
 * calls, in order, as the served family's output record reads them. Parsing never fails: what
 * cannot be a tool call stays text and is flagged.
 *
 * @module
 */
import type { ModelFormats, OutputOptions } from "./family.ts";
import { modelFamily } from "./model_family.ts";
import type { ParsedOutput } from "./output_blocks.ts";

/** What the parser needs to know about the model and the request that produced the output. */
export interface ParseOptions extends Omit<OutputOptions, "formats"> {
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
  return modelFamily(formats).output.parse(text, { ...options, formats });
}
