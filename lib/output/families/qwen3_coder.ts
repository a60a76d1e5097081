/**
 * Qwen3-Coder's XML tool calls (`<tool_call>\n<function=NAME>\n<parameter=KEY>…`), typed by the
 * tools' schemas, in ChatML messages.
 *
 * @module
 */
import { EOS_ENDS, type ModelFamily, TAGGED_CALLS, thinksInTags } from "../family.ts";
import { parseQwen3CoderCalls } from "../qwen3_coder_parser.ts";
import { reasonedOutput } from "../reasoned_output.ts";
import { CHATML_ROLES } from "./qwen.ts";

/** Qwen3-Coder (and Qwen3.5's templates, which write its calls). */
export const QWEN3_CODER: ModelFamily = {
  name: "Qwen3-Coder (XML tool calls)",
  toolCallParsers: ["qwen3_coder"],
  detect: (has) => has("<function=") && has("<parameter=") ? "qwen3_coder" : null,
  detectReasoning: thinksInTags,
  ends: EOS_ENDS,
  output: reasonedOutput({
    parseAnswer: parseQwen3CoderCalls,
    regions: TAGGED_CALLS,
    callsStart: "<tool_call>",
  }),
  roles: CHATML_ROLES,
  toolCallIds: "client",
};
