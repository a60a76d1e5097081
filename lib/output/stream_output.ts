/**
 * Output parsed as it is sampled: text chunks in, block deltas out, so an agent reads thinking and
 * text while the model writes them (T6, streamed).
 *
 * What is streamed always adds up to what {@linkcode parseOutput} makes of the whole text, for
 * any way the text is cut into chunks: a delta is sent only once no later text can change it.
 * - Thinking and text stream as they come, less what may still turn out to be part of a marker
 *   (`</think>`, `<tool_call>`, `<|end|>`…) and whitespace a block may end with, which the parser
 *   trims.
 * - A tool call is sent whole when its closing marker arrives: a call that turns out ill-formed
 *   stays text (T6), and a call already sent cannot be taken back. Where SGLang streams a call's
 *   arguments piece by piece, the agent gets the same call in one piece; it cannot run half a call.
 *
 * Each event names its block by index in the parsed output's blocks; a block ends when a later
 * index appears, or at the end. Each family's output record owns its stream (`reasoned_stream.ts`
 * for the families that reason in `<think>` blocks, `harmony_parser.ts` for gpt-oss's channels):
 * `streamOutput` asks the served family's record for it.
 *
 * @module
 */
import { modelFamily } from "./model_family.ts";
import type { OutputStream } from "./output_blocks.ts";
import { type ParseOptions, QWEN3 } from "./parse_output.ts";

/**
 * A stream parsing output as {@linkcode parseOutput} does with the same options.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { streamOutput } from "./stream_output.ts";
 * const stream = streamOutput({ startsInReasoning: false, tools: new Map() });
 * const events = [
 *   ...stream.push("<think>\nlo"),
 *   ...stream.push("ok\n</think>\n\nDo"),
 *   ...stream.push("ne."),
 *   ...stream.end(),
 * ];
 * assert.deepEqual(events, [
 *   { type: "thinking", index: 0, thinking: "lo" },
 *   { type: "thinking", index: 0, thinking: "ok" },
 *   { type: "text", index: 1, text: "Do" },
 *   { type: "text", index: 1, text: "ne." },
 * ]);
 * ```
 */
export function streamOutput(options: ParseOptions): OutputStream {
  const formats = options.formats ?? QWEN3;
  return modelFamily(formats).output.stream({ ...options, formats });
}
