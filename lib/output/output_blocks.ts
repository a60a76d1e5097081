/**
 * What a parsed output is made of, whichever family's parser made it (`parse_output.ts`,
 * `harmony_parser.ts`): thinking, text and tool calls, in order; and the events that stream them.
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

/** A piece of a parsed output, in order: to be appended to, or to become, block `index`. */
export type OutputEvent =
  | { readonly type: "thinking"; readonly index: number; readonly thinking: string }
  | { readonly type: "text"; readonly index: number; readonly text: string }
  | {
    readonly type: "tool_call";
    readonly index: number;
    readonly name: string;
    readonly input: Record<string, unknown>;
  };

/** Parses output as it arrives. */
export interface OutputStream {
  /** The events `chunk` settles. */
  push(chunk: string): OutputEvent[];
  /** The events the end of the output settles; the stream takes no more chunks. */
  end(): OutputEvent[];
}
