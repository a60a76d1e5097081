/**
 * Qwen's hermes-style tool calls (`<tool_call>\n{json}\n</tool_call>`), ChatML messages and
 * `<think>` reasoning: Qwen2.5, Qwen3 and the many templates that copy them. What a template is
 * taken for when it renders `<tool_call>` and no other family's markers.
 *
 * @module
 */
import {
  EOS_ENDS,
  type ModelFamily,
  namedRole,
  type RoleMarkers,
  TAGGED_CALLS,
  thinksInTags,
} from "../family.ts";
import { reasonedOutput } from "../reasoned_output.ts";
import { parseToolCalls } from "../tool_parser.ts";

/**
 * ChatML's role markers (`<|im_start|>ROLE`), with Qwen's `<tool_response>` blocks as tool
 * results (several of them under one `user` marker).
 */
export const CHATML_ROLES: RoleMarkers = {
  openers: ["<|im_start|>"],
  role: (text) => {
    if (text.startsWith("<tool_response>")) return "tool";
    const role = /^<\|im_start\|>(\w+)/.exec(text)?.[1];
    return role === "user" && /^<\|im_start\|>user\s*<tool_response>/.test(text)
      ? "tool"
      : namedRole(role);
  },
  lead: "join",
  toolBlock: "<tool_response>",
};

/** Qwen2.5 and Qwen3. */
export const QWEN: ModelFamily = {
  name: "Qwen (hermes JSON tool calls)",
  toolCallParsers: ["qwen25", "qwen"],
  detect: (has) => has("<tool_call>") ? "qwen25" : null,
  detectLast: true,
  detectReasoning: thinksInTags,
  ends: EOS_ENDS,
  output: reasonedOutput({
    parseAnswer: (text, tools) => parseToolCalls(text, new Set(tools.keys())),
    regions: TAGGED_CALLS,
    callsStart: "<tool_call>",
  }),
  roles: CHATML_ROLES,
  toolCallIds: "client",
  imagePad: "<|image_pad|>",
};
