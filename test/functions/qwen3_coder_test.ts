/**
 * A Qwen3-Coder model (Qwen3's vocabulary, its XML tool-call template shipped in
 * fixtures/templates/qwen3_coder.jinja) served end to end through the `openai` SDK: the format
 * detected from the template, calls parsed with values typed by the tools' schemas, the SDK's
 * echoes continuing one exact chain.
 */
import OpenAI from "openai";
import assert from "node:assert/strict";
import { defaultTokenizerPath } from "../../lib/config/mod.ts";
import { loadTokenizer } from "../../lib/tokenizer/mod.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { startGateway } from "../_gateway.ts";

const TEMPLATE = new URL("../../fixtures/templates/qwen3_coder.jinja", import.meta.url);

const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "run",
      description: "Run a shell command.",
      parameters: { type: "object", properties: { command: { type: "string" } } },
    },
  },
  {
    type: "function",
    function: {
      name: "wait",
      description: "Wait.",
      parameters: {
        type: "object",
        properties: {
          seconds: { type: "integer" },
          loud: { type: "boolean" },
          tags: { type: "array", items: { type: "string" } },
        },
      },
    },
  },
];

const call = (name: string, params: Record<string, string>) =>
  `<tool_call>\n<function=${name}>\n${
    Object.entries(params).map(([key, value]) => `<parameter=${key}>\n${value}\n</parameter>\n`)
      .join("")
  }</function>\n</tool_call>`;

const REPLIES = [
  `Let me look.\n\n${call("run", { command: "ls -la\ncat notes.txt" })}`,
  call("wait", { seconds: "3", loud: "true", tags: '["a", "b"]' }),
  "Done: two files.",
];

Deno.test("a Qwen3-Coder model's XML tool calls are parsed with typed values and recorded as one exact chain", async () => {
  const tokenizer = await loadTokenizer(defaultTokenizerPath(), {
    chatTemplate: await Deno.readTextFile(TEMPLATE),
  });
  const gw = await startGateway({ script: [...REPLIES], tokenizer });
  try {
    assert.deepEqual(gw.deps.formats, { toolCallParser: "qwen3_coder", reasoningParser: null });
    const { id, token } = await gw.openSession();
    const client = gw.openai(token);
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: "system", content: "You are a coding agent." },
      { role: "user", content: "What is here?" },
    ];
    const replies: OpenAI.Chat.ChatCompletionMessage[] = [];
    for (const outputs of [["a.txt\nnotes.txt"], ["waited"], null]) {
      const reply =
        (await client.chat.completions.create({ model: "qwen3-coder", messages, tools: TOOLS }))
          .choices[0].message;
      replies.push(reply);
      messages.push(reply as OpenAI.Chat.ChatCompletionMessageParam);
      if (outputs === null) break;
      reply.tool_calls!.forEach((c, k) =>
        messages.push({ role: "tool", tool_call_id: c.id, content: outputs[k] })
      );
    }
    const args = (reply: OpenAI.Chat.ChatCompletionMessage) =>
      reply.tool_calls!.map((c) => {
        const fn = (c as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function;
        return [fn.name, JSON.parse(fn.arguments)];
      });
    assert.equal(replies[0].content, "Let me look.");
    assert.deepEqual(args(replies[0]), [["run", { command: "ls -la\ncat notes.txt" }]]);
    assert.deepEqual(args(replies[1]), [["wait", { seconds: 3, loud: true, tags: ["a", "b"] }]]);
    assert.equal(replies[2].content, "Done: two files.");
    // The model read its own template: the tools as XML, the tool results as <tool_response>.
    const prompt = gw.tokenizer.decode(gw.engine.calls[0].inputIds);
    assert.match(prompt, /<tools>\n<function>\n<name>run<\/name>/);
    assert.match(
      gw.tokenizer.decode(gw.engine.calls[1].inputIds.slice(gw.engine.calls[0].inputIds.length)),
      /<\|im_end\|>\n<\|im_start\|>user\n<tool_response>\na\.txt\nnotes\.txt\n<\/tool_response>\n<\|im_end\|>\n<\|im_start\|>assistant\n$/,
    );
    assertChainExact(gw.engine.calls, await gw.samples(id), "qwen3_coder");
    assert.equal((await gw.session(id)).chains.length, 1, "no fork");
  } finally {
    await gw.close();
  }
});
