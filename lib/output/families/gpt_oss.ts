/**
 * gpt-oss's harmony format: messages `<|start|>ROLE<|channel|>CHANNEL …<|message|>…`, whose
 * channels carry reasoning (`analysis`), calls (`commentary to=functions.NAME`) and the answer
 * (`final`); one parser reads them all.
 *
 * @module
 */
import { type ModelFamily, namedRole, type TurnEndTexts } from "../family.ts";
import { parseHarmony, streamHarmony } from "../harmony_parser.ts";

/**
 * Harmony ends a turn with `<|call|>` after a tool call and `<|return|>` after a final answer;
 * both are stop tokens. A message inside a turn ends with `<|end|>`, which is also what the
 * template writes after an earlier final answer, so it closes a cut output.
 */
const HARMONY_ENDS: TurnEndTexts = {
  stops: ["<|return|>", "<|call|>"],
  close: "<|end|>",
  closers: ["<|end|>", "<|call|>"],
  openers: [],
};

/** gpt-oss (20b and 120b). */
export const GPT_OSS: ModelFamily = {
  name: "gpt-oss (harmony)",
  toolCallParsers: ["gpt-oss"],
  detect: (has) => has("<|channel|>") ? "gpt-oss" : null,
  detectReasoning: () => "gpt-oss",
  ends: HARMONY_ENDS,
  // One parser reads reasoning, text and calls alike, so it goes with its own reasoning parser.
  output: {
    parse: (text, { tools }) => parseHarmony(text, new Set(tools.keys())),
    stream: ({ tools }) => streamHarmony(new Set(tools.keys())),
    ownReasoning: "gpt-oss",
  },
  roles: {
    openers: ["<|start|>"],
    role: (text) => {
      const role = /^<\|start\|>([^<\s]+)/.exec(text)?.[1];
      return role?.startsWith("functions.") ? "tool" : namedRole(role);
    },
    lead: "join",
  },
  toolCallIds: "client",
};
