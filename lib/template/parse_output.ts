/**
 * Turns the text of sampled tokens into what the agent receives (T6): thinking, text and tool
 * calls, in order. Parsing never fails: what cannot be a tool call stays text and is flagged.
 *
 * @module
 */
import { splitReasoning } from "./reasoning_parser.ts";
import { type AnswerPart, parseToolCalls } from "./tool_parser.ts";

/** One block of a parsed output. */
export type OutputBlock = { readonly type: "thinking"; readonly thinking: string } | AnswerPart;

/** A parsed output and the reasons it was ill-formed (empty when it was not). */
export interface ParsedOutput {
  readonly blocks: OutputBlock[];
  readonly illFormed: string[];
}

/** What the parser needs to know about the request that produced the output. */
export interface ParseOptions {
  /** The prompt ended inside an open `<think>` block. */
  readonly startsInReasoning: boolean;
  /** Names of the tools the request offered. */
  readonly toolNames: ReadonlySet<string>;
}

/**
 * Parses decoded model output (end-of-turn token already removed).
 *
 * @example
 * ```ts
 * parseOutput("<think>\nlook\n</think>\n\nDone.", { startsInReasoning: false, toolNames: new Set() });
 * // { blocks: [{ type: "thinking", thinking: "look" }, { type: "text", text: "Done." }], illFormed: [] }
 * ```
 */
export function parseOutput(text: string, options: ParseOptions): ParsedOutput {
  const { reasoning, rest } = splitReasoning(text, options.startsInReasoning);
  const answer = parseToolCalls(rest, options.toolNames);
  const blocks: OutputBlock[] = [];
  if (reasoning !== null && reasoning.length > 0) {
    blocks.push({ type: "thinking", thinking: reasoning });
  }
  blocks.push(...answer.parts);
  return { blocks, illFormed: answer.illFormed };
}
