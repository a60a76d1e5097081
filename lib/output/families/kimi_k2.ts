/**
 * Kimi K2's sections of calls (`<|tool_calls_section_begin|>` … `functions.NAME:IDX` …), whose
 * ids the template makes up from the function's name and index, and its `<|im_…|>` messages,
 * each ended by `<|im_end|>`.
 *
 * @module
 */
import { type ModelFamily, namedRole, type TurnEndTexts } from "../family.ts";
import { reasonedOutput } from "../reasoned_output.ts";
import { KIMI_K2_SECTION_BEGIN, parseKimiK2Calls } from "../section_calls.ts";

/**
 * Kimi K2 ends every message with `<|im_end|>` and nothing between messages; its tokenizer's
 * `eos_token` is `[EOS]`, which the chat never samples.
 */
const KIMI_ENDS: TurnEndTexts = {
  stops: ["<|im_end|>"],
  close: "<|im_end|>",
  closers: ["<|im_end|>"],
  openers: [],
};

/** Kimi K2 (Instruct and Thinking). */
export const KIMI_K2: ModelFamily = {
  name: "Kimi K2",
  toolCallParsers: ["kimi_k2"],
  detect: (has) => has("<|tool_calls_section_begin|>") ? "kimi_k2" : null,
  detectReasoning: (has) => has("<think>") ? "kimi_k2" : null,
  ends: KIMI_ENDS,
  output: reasonedOutput({
    parseAnswer: (text, tools) => parseKimiK2Calls(text, new Set(tools.keys())),
    regions: { open: KIMI_K2_SECTION_BEGIN, close: "<|tool_calls_section_end|>", once: true },
    // Its section of calls ends its reasoning as `<tool_call>` ends the others'.
    callsStart: KIMI_K2_SECTION_BEGIN,
  }),
  roles: {
    openers: ["<|im_system|>", "<|im_user|>", "<|im_assistant|>"],
    // The name after the marker (`tool` under `<|im_system|>`), else the marker's own role.
    role: (text) => {
      const [, marker, name] = /^<\|im_(\w+)\|>(\w*)/.exec(text) ?? [];
      const named = namedRole(name);
      return named === "context" ? namedRole(marker) : named;
    },
    lead: "join",
  },
  toolCallIds: "functions",
};
