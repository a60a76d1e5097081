/**
 * Outputs of every served family and the fold of streamed output events back into blocks,
 * shared by the tests of parsing as text streams and as tokens stream.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ModelFormats, OutputBlock, OutputEvent, ToolSchemas } from "../../lib/output/mod.ts";

export const TOOLS: ToolSchemas = new Map<string, Record<string, unknown>>([
  ["ReadFile", { type: "object", properties: { path: { type: "string" } } }],
  ["get_weather", {
    type: "object",
    properties: { city: { type: "string" }, days: { type: "integer" } },
  }],
  ["Bash", { type: "object", properties: { command: { type: "string" } } }],
]);

export const FORMATS: Record<string, ModelFormats> = {
  qwen3: { toolCallParser: "qwen25", reasoningParser: "qwen3" },
  qwen3_coder: { toolCallParser: "qwen3_coder", reasoningParser: null },
  deepseekv31: { toolCallParser: "deepseekv31", reasoningParser: "deepseek-v3" },
  "gpt-oss": { toolCallParser: "gpt-oss", reasoningParser: "gpt-oss" },
  glm45: { toolCallParser: "glm45", reasoningParser: "glm45" },
  glm47: { toolCallParser: "glm47", reasoningParser: "glm45" },
  kimi_k2: { toolCallParser: "kimi_k2", reasoningParser: "kimi_k2" },
};

/** The blocks the events build, checking each event extends the last block or starts the next. */
export function fold(events: readonly OutputEvent[]): OutputBlock[] {
  const blocks: OutputBlock[] = [];
  for (const event of events) {
    const last = blocks.at(-1);
    if (event.index === blocks.length) {
      blocks.push(
        event.type === "thinking"
          ? { type: "thinking", thinking: event.thinking }
          : event.type === "text"
          ? { type: "text", text: event.text }
          : { type: "tool_call", name: event.name, input: event.input },
      );
    } else {
      assert.equal(event.index, blocks.length - 1, `event out of order: ${JSON.stringify(event)}`);
      if (event.type === "thinking" && last?.type === "thinking") {
        blocks[blocks.length - 1] = { type: "thinking", thinking: last.thinking + event.thinking };
      } else if (event.type === "text" && last?.type === "text") {
        blocks[blocks.length - 1] = { type: "text", text: last.text + event.text };
      } else {assert.fail(
          `event of another type for block ${event.index}: ${JSON.stringify(event)}`,
        );}
    }
    if (event.type !== "tool_call") {
      assert.ok((event.type === "text" ? event.text : event.thinking).length > 0, "empty delta");
    }
  }
  return blocks;
}

/** Outputs of every family: good calls, parallel calls, malformed ones, outputs cut short. */
export const TABLE: [string, boolean, string][] = [
  [
    "qwen3",
    false,
    '<think>\nplan\n\n</think>\n\nLet me look.\n<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>',
  ],
  ["qwen3", true, "\n\nstill thinking\n</think>\n\n  Answer  \n"],
  [
    "qwen3",
    true,
    'thinking until a call <tool_call>\n{"name": "ReadFile", "arguments": {"path": "a"}}\n</tool_call>\n<tool_call>\n{"name": "Bash", "arguments": {"command": "pwd"}}\n</tool_call>',
  ],
  [
    "qwen3",
    false,
    'Text <tool_call>\n{"name": "Unknown", "arguments": {}}\n</tool_call> more <tool_call>\n{"name": "Bash", "arguments": {"command": "x"}}\n</tool_call> tail',
  ],
  ["qwen3", false, 'cut <tool_call>\n{"name": "Bash", "argu'],
  ["qwen3", false, "<think>cut short in thought\n"],
  ["qwen3", false, "   \n  "],
  ["qwen3", false, "a <tool_call ></tool_call> <tool_ca"],
  ["qwen3", false, " \n<thinking>not a think tag</thinking>"],
  ["qwen3", true, " \n \n"],
  ["qwen3", false, "one\n\n  two <tool_call>\n{}\n</tool_call>\n\n three\t"],
  [
    "qwen3_coder",
    false,
    "Reading.\n<tool_call>\n<function=ReadFile>\n<parameter=path>\n/tmp/a\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
  ],
  ["qwen3_coder", false, "<tool_call>\n<function=Nope>\n</function>\n</tool_call> after"],
  [
    "qwen3_coder",
    false,
    "<tool_call>\n</tool_call>between<tool_call>\n<function=Bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>",
  ],
  [
    "deepseekv31",
    true,
    'reason</think>Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>ReadFile<｜tool▁sep｜>{"path": "a"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>Bash<｜tool▁sep｜>{"command": "ls"}<｜tool▁call▁end｜><｜tool▁calls▁end｜> trailing <｜tool▁calls▁begin｜>',
  ],
  [
    "deepseekv31",
    false,
    "Hi <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>Nope<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜> after",
  ],
  ["deepseekv31", false, 'Cut <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>Bash<｜tool▁sep｜>{"comm'],
  [
    "gpt-oss",
    false,
    '<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary<|message|> Preamble <|end|><|start|>assistant<|channel|>commentary to=functions.Bash <|constrain|>json<|message|>{"command": "ls"}',
  ],
  ["gpt-oss", false, "<|channel|>final<|message|>Answer<|end|>junk after"],
  [
    "gpt-oss",
    false,
    "<|channel|>commentary to=functions.Nope<|message|>{}<|end|><|start|>assistant<|channel|>weird<|message|>x<|end|><|channel|>final<|message|>ok",
  ],
  ["gpt-oss", false, "<|channel|>analysis<|message|>cut short <|en"],
  ["gpt-oss", false, "plain text, no harmony"],
  [
    "gpt-oss",
    false,
    '<|start|>assistant to=functions.ReadFile<|channel|>commentary json<|message|>{"path": "a"}<|call|>',
  ],
  ["gpt-oss", false, "<|channel|>final<|message|>  a  <|end|><|sta"],
  [
    "gpt-oss",
    false,
    "<|channel|>analysis<|message|><|end|><|start|>assistant<|start|>assistant<|channel|>final<|message|>x",
  ],
  [
    "glm45",
    false,
    "\n<think>plan</think>\nLooking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
  ],
  [
    "glm47",
    true,
    "plan</think>ok<tool_call>Bash<arg_key>command</arg_key><arg_value>ls -la</arg_value></tool_call><tool_call>Nope</tool_call>",
  ],
  [
    "glm47",
    true,
    "plan<tool_call>ReadFile<arg_key>path</arg_key><arg_value>a</arg_value></tool_call>",
  ],
  [
    "kimi_k2",
    false,
    '<think>look</think>Reading<|tool_calls_section_begin|><|tool_call_begin|>functions.ReadFile:0<|tool_call_argument_begin|>{"path": "a"}<|tool_call_end|><|tool_calls_section_end|>done',
  ],
  [
    "kimi_k2",
    false,
    "bad <|tool_calls_section_begin|><|tool_call_begin|>functions.ReadFile:0<|tool_call_argument_begin|>not json<|tool_call_end|><|tool_calls_section_end|> after",
  ],
];
