/**
 * DeepSeek-V3.1's sections of calls (`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>…`)
 * and its full-width role markers. DeepSeek-V3's older call format (`function<｜tool▁sep｜>`) is
 * recognised and refused: it is not parsed yet.
 *
 * @module
 */
import { EOS_ENDS, type MessageRole, type ModelFamily, roleByMarker } from "../family.ts";
import { reasonedOutput } from "../reasoned_output.ts";
import { parseDeepSeekV31Calls } from "../section_calls.ts";

const ROLES: Readonly<Record<string, MessageRole>> = {
  "<｜User｜>": "user",
  "<｜Assistant｜>": "assistant",
  "<｜tool▁output▁begin｜>": "tool",
};

/** DeepSeek-V3.1 and later V3 releases. */
export const DEEPSEEK: ModelFamily = {
  name: "DeepSeek-V3.1",
  toolCallParsers: ["deepseekv31"],
  detect: (has) =>
    has("tool▁calls▁begin") ? (has("function<｜tool▁sep｜>") ? "deepseekv3" : "deepseekv31") : null,
  detectReasoning: () => "deepseek-v3",
  ends: EOS_ENDS,
  output: reasonedOutput({
    parseAnswer: (text, tools) => parseDeepSeekV31Calls(text, new Set(tools.keys())),
    regions: { open: "<｜tool▁calls▁begin｜>", close: "<｜tool▁calls▁end｜>", once: true },
    callsStart: "<tool_call>",
  }),
  roles: { openers: Object.keys(ROLES), role: roleByMarker(ROLES), lead: "system" },
  toolCallIds: "client",
};
