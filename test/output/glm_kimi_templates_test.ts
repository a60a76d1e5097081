/**
 * GLM's and Kimi K2's templates (fixtures/templates, with their sources in each header) rendered
 * with the Jinja engine the tokenizer uses, on literal strings, independent of any tokenizer: how
 * each renders tool calls and results, where a turn ends, and the calls it renders read back by
 * the gateway's parsers as the same calls. Their token-level deltas are in
 * test/template/family_templates_test.ts.
 */
import assert from "node:assert/strict";
import { Template } from "@huggingface/jinja";
import type { ChatMessage, ChatTool } from "../../lib/chat/mod.ts";
import { type GlmVariant, parseGlmCalls, parseKimiK2Calls } from "../../lib/output/mod.ts";

const render = async (name: string, messages: ChatMessage[], tools: ChatTool[]) =>
  new Template(
    await Deno.readTextFile(new URL(`../../fixtures/templates/${name}.jinja`, import.meta.url)),
  ).render({ messages, tools, add_generation_prompt: true, bos_token: "", eos_token: "" });

const TOOLS: ChatTool[] = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Get weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" } },
    },
  },
}];

const CALL = { city: "Paris", days: 2 };

const CONVERSATION: ChatMessage[] = [
  { role: "user", content: "Weather?" },
  {
    role: "assistant",
    content: "Checking.",
    tool_calls: [{
      id: "functions.get_weather:0",
      type: "function",
      function: { name: "get_weather", arguments: CALL },
    }],
  },
  { role: "tool", tool_call_id: "functions.get_weather:0", name: "get_weather", content: "sunny" },
  { role: "user", content: "Thanks" },
];

const schemas = new Map(TOOLS.map((tool) => [tool.function.name, tool.function.parameters]));

/** The turns each GLM template renders for CONVERSATION, from the first user message on. */
const GLM_TURNS: [GlmVariant, string, string][] = [
  [
    "glm45",
    "calls with newlines",
    "<|user|>\nWeather?<|assistant|>\n<think></think>\nChecking.\n" +
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n" +
    "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>" +
    "<|observation|>\n<tool_response>\nsunny\n</tool_response>" +
    "<|user|>\nThanks<|assistant|>",
  ],
  [
    "glm47",
    "the same without newlines, thinking opened by the generation prompt",
    "<|user|>Weather?<|assistant|></think>Checking." +
    "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>" +
    "<arg_key>days</arg_key><arg_value>2</arg_value></tool_call>" +
    "<|observation|><tool_response>sunny</tool_response>" +
    "<|user|>Thanks<|assistant|><think>",
  ],
];

for (const [variant, what, expected] of GLM_TURNS) {
  Deno.test(`${variant}'s template: ${what}; results after <|observation|>, no end-of-turn token`, async () => {
    const text = await render(variant, CONVERSATION, TOOLS);
    const turns = text.slice(text.indexOf("<|user|>"));
    // The assistant's turn ends where the next role marker starts: the model samples that
    // marker (`<|observation|>` here) as its stop token.
    assert.equal(turns, expected);
    const call = turns.slice(turns.indexOf("<tool_call>"), turns.indexOf("<|observation|>"));
    assert.deepEqual(parseGlmCalls(call, schemas, variant), {
      parts: [{ type: "tool_call", name: "get_weather", input: CALL }],
      illFormed: [],
    });
  });
}

Deno.test("Kimi K2's template: a section of calls, results as tool messages, <|im_end|> with no separator", async () => {
  const text = await render("kimi_k2", CONVERSATION, TOOLS);
  assert.ok(
    text.startsWith(
      '<|im_system|>tool_declare<|im_middle|>[{"type": "function", "function": {"name": "get_weather"',
    ),
  );
  const turns = text.slice(text.indexOf("<|im_user|>"));
  assert.equal(
    turns,
    "<|im_user|>user<|im_middle|>Weather?<|im_end|>" +
      "<|im_assistant|>assistant<|im_middle|>Checking.<|tool_calls_section_begin|>" +
      '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris", "days": 2}' +
      "<|tool_call_end|><|tool_calls_section_end|><|im_end|>" +
      // This template writes `\n` as two characters here.
      "<|im_system|>tool<|im_middle|>## Return of functions.get_weather:0\\nsunny<|im_end|>" +
      "<|im_user|>user<|im_middle|>Thanks<|im_end|><|im_assistant|>assistant<|im_middle|>",
  );
  const answer = turns.slice(
    turns.indexOf("Checking."),
    turns.indexOf("<|im_end|><|im_system|>tool"),
  );
  assert.deepEqual(parseKimiK2Calls(answer, new Set(["get_weather"])), {
    parts: [
      { type: "text", text: "Checking." },
      { type: "tool_call", name: "get_weather", input: CALL },
    ],
    illFormed: [],
  });
});
