/**
 * GLM-4.5, 4.6 and 4.7: `<arg_key>`/`<arg_value>` calls (4.7 writes the name and the first key
 * with nothing between them), `<|user|>`-style role markers and no end-of-turn token.
 *
 * @module
 */
import {
  type MessageRole,
  type ModelFamily,
  roleByMarker,
  TAGGED_CALLS,
  type TurnEndTexts,
} from "../family.ts";
import { parseGlmCalls } from "../glm_parser.ts";
import { reasonedOutput } from "../reasoned_output.ts";

/**
 * GLM has no end-of-turn token: the model stops by sampling the next message's role marker,
 * `<|observation|>` before tool results or `<|user|>` (or `<|endoftext|>`), and the template
 * renders the next message right after the assistant's text, starting with that marker.
 */
const GLM_ENDS: TurnEndTexts = {
  stops: ["<|endoftext|>", "<|user|>", "<|observation|>"],
  close: false,
  closers: [],
  openers: ["<|user|>", "<|observation|>", "<|system|>", "<|assistant|>"],
};

const ROLES: Readonly<Record<string, MessageRole>> = {
  "<|system|>": "system",
  "<|user|>": "user",
  "<|assistant|>": "assistant",
  "<|observation|>": "tool",
};

/** GLM-4.5 to 4.7. */
export const GLM: ModelFamily = {
  name: "GLM-4.5 to 4.7",
  toolCallParsers: ["glm", "glm45", "glm47"],
  detect: (has) => has("<arg_key>") ? (has("{function-name}<arg_key>") ? "glm47" : "glm45") : null,
  detectReasoning: (has) => has("<think>") ? "glm45" : null,
  ends: GLM_ENDS,
  output: reasonedOutput({
    parseAnswer: (text, tools, parser) =>
      parseGlmCalls(text, tools, parser === "glm47" ? "glm47" : "glm45"),
    regions: TAGGED_CALLS,
    callsStart: "<tool_call>",
  }),
  roles: {
    openers: Object.keys(ROLES),
    role: roleByMarker(ROLES),
    lead: "join",
    toolBlock: "<tool_response>",
  },
  toolCallIds: "client",
};
