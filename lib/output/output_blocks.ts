/**
 * What a parsed output is made of, whichever family's parser made it (`parse_output.ts`,
 * `harmony_parser.ts`): thinking, text and tool calls, in order.
 *
 * @module
 */
import type { AnswerPart } from "./tool_parser.ts";

/** One block of a parsed output. */
export type OutputBlock = { readonly type: "thinking"; readonly thinking: string } | AnswerPart;

/** A parsed output and the reasons it was ill-formed (empty when it was not). */
export interface ParsedOutput {
  readonly blocks: OutputBlock[];
  readonly illFormed: string[];
}
