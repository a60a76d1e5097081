/**
 * Output parsed as it streams: for every family and every way of cutting an output into chunks,
 * the streamed events add up to what `parseOutput` makes of the whole text. SGLang's own
 * streaming chunk sequences come first; then every output of the table is cut at every place,
 * one character at a time, and at random.
 */
import assert from "node:assert/strict";
import {
  type ModelFormats,
  type OutputBlock,
  type OutputEvent,
  type ParseOptions,
  parseOutput,
  streamOutput,
  type ToolSchemas,
} from "../../lib/template/mod.ts";

const TOOLS: ToolSchemas = new Map<string, Record<string, unknown>>([
  ["ReadFile", { type: "object", properties: { path: { type: "string" } } }],
  ["get_weather", {
    type: "object",
    properties: { city: { type: "string" }, days: { type: "integer" } },
  }],
  ["Bash", { type: "object", properties: { command: { type: "string" } } }],
]);

const FORMATS: Record<string, ModelFormats> = {
  qwen3: { toolCallParser: "qwen25", reasoningParser: "qwen3" },
  qwen3_coder: { toolCallParser: "qwen3_coder", reasoningParser: null },
  deepseekv31: { toolCallParser: "deepseekv31", reasoningParser: "deepseek-v3" },
  "gpt-oss": { toolCallParser: "gpt-oss", reasoningParser: "gpt-oss" },
  glm45: { toolCallParser: "glm45", reasoningParser: "glm45" },
  glm47: { toolCallParser: "glm47", reasoningParser: "glm45" },
  kimi_k2: { toolCallParser: "kimi_k2", reasoningParser: "kimi_k2" },
};

/** The blocks the events build, checking each event extends the last block or starts the next. */
function fold(events: readonly OutputEvent[]): OutputBlock[] {
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

/** The events of `chunks` streamed in order, and the events of each push. */
function stream(chunks: readonly string[], options: ParseOptions) {
  const output = streamOutput(options);
  const pushes = chunks.map((chunk) => output.push(chunk));
  const end = output.end();
  return { events: [...pushes.flat(), ...end], pushes, end };
}

const options = (format: string, startsInReasoning = false): ParseOptions => ({
  startsInReasoning,
  tools: TOOLS,
  formats: FORMATS[format],
});

Deno.test("streamOutput() on SGLang's streaming chunk sequences gives what parseOutput() gives the whole", () => {
  const cases: [string, boolean, string[]][] = [
    // test_kimik2_detector.py: test_streaming_single_tool_call, _multiple_tool_calls
    ["kimi_k2", false, [
      "<|tool_calls_section_begin|><|tool_call_begin|>functions.ReadFile:0<|tool_call_argument_begin|>{",
      '"path": "/test.py"',
      "}",
      "<|tool_call_end|><|tool_calls_section_end|>",
    ]],
    ["kimi_k2", false, [
      '<|tool_calls_section_begin|><|tool_call_begin|>functions.ReadFile:0<|tool_call_argument_begin|>{"path": "/a.py"}',
      "<|tool_call_end|>",
      '<|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>{"city": "Paris"}',
      "<|tool_call_end|>",
      "<|tool_calls_section_end|>",
    ]],
    // test_streaming_normal_think_then_tool_call, _tool_call_inside_think, _partial_marker_buffering
    ["kimi_k2", false, [
      "<think>",
      "Analyzing the request...",
      "</think>",
      "<|tool_calls_section_begin|>",
      "<|tool_call_begin|>functions.ReadFile:0",
    ]],
    ["kimi_k2", false, [
      "<think>",
      "I need to",
      " read the file.",
      "<|tool_calls_section_begin|>",
      "<|tool_call_begin|>functions.ReadFile:5",
      "<|tool_call_argument_begin|>",
      '{"path": "/Users/user/project/file.ts"}',
      "<|tool_call_end|>",
      "<|tool_calls_section_end|>",
    ]],
    ["kimi_k2", true, ["some reasoning", "<|tool", "_calls_section_begin|>rest"]],
    // test_harmony_parser.py: test_streaming_canonical_format, the commentary call
    ["gpt-oss", false, [
      "<|channel|>analysis<|message|>",
      "reasoning content",
      "<|end|>",
      "<|start|>assistant<|channel|>final<|message|>",
      "final answer",
      "<|return|>",
    ]],
    ["gpt-oss", false, [
      "<|channel|>commentary to=functions.get_weather",
      "<|message|>",
      '{"location":"SF"}',
      "<|call|>",
    ]],
    // test_reasoning_parser.py: a start token split across chunks, then the end token
    ["qwen3", false, ["<thi", "nk>Let me think", " about it</th", "ink>The answer"]],
    // Qwen2.5's detector streamed: a call whose JSON arrives piece by piece
    ["qwen3", false, [
      "<tool_call>\n",
      '{"name": "get_weather", ',
      '"arguments": {"city": "Par',
      'is", "days": 3}}\n</tool_call>',
    ]],
  ];
  for (const [format, startsInReasoning, chunks] of cases) {
    const opts = options(format, startsInReasoning);
    const { events } = stream(chunks, opts);
    assert.deepEqual(fold(events), parseOutput(chunks.join(""), opts).blocks, chunks.join("|"));
  }
});

Deno.test("streamOutput() sends thinking and text as they come, and a call only once it closes", () => {
  const opts = options("qwen3");
  const { pushes, end } = stream([
    "<think>\nI will ",
    "look</th",
    "ink>\n\nListing ",
    "now.\n<tool_call>\n",
    '{"name": "Bash", "arguments": {"command": "ls"}}',
    "\n</tool_call>",
  ], opts);
  assert.deepEqual(pushes, [
    [{ type: "thinking", index: 0, thinking: "I will " }],
    [{ type: "thinking", index: 0, thinking: "look" }],
    [{ type: "text", index: 1, text: "Listing" }],
    [{ type: "text", index: 1, text: " now." }],
    [],
    [{ type: "tool_call", index: 2, name: "Bash", input: { command: "ls" } }],
  ]);
  assert.deepEqual(end, []);
  // A call that turns out ill-formed is sent as the text it is, in the text block it interrupts.
  const bad = stream(["Try ", '<tool_call>\n{"name": "Nope"}\n</tool_call>', " again"], opts);
  assert.deepEqual(bad.pushes, [
    [{ type: "text", index: 0, text: "Try" }],
    [{ type: "text", index: 0, text: ' <tool_call>\n{"name": "Nope"}\n</tool_call>' }],
    [{ type: "text", index: 0, text: " again" }],
  ]);
  // Harmony's analysis streams as thinking; a final answer as text, each message its own block.
  const harmony = stream([
    "<|channel|>analysis<|message|>Ch",
    "eck.<|end|><|start|>assistant<|channel|>final<|message|>Do",
    "ne.",
  ], options("gpt-oss"));
  assert.deepEqual(harmony.pushes, [
    [{ type: "thinking", index: 0, thinking: "Ch" }],
    [{ type: "thinking", index: 0, thinking: "eck." }, { type: "text", index: 1, text: "Do" }],
    [{ type: "text", index: 1, text: "ne." }],
  ]);
});

/** Outputs of every family: good calls, parallel calls, malformed ones, outputs cut short. */
const TABLE: [string, boolean, string][] = [
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

/** A deterministic pseudo-random source (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("streamOutput() adds up to parseOutput() for every family, cut at every place and at random", () => {
  for (const [format, startsInReasoning, text] of TABLE) {
    const opts = options(format, startsInReasoning);
    const expected = parseOutput(text, opts).blocks;
    const check = (chunks: string[], how: string) =>
      assert.deepEqual(fold(stream(chunks, opts).events), expected, `${format} ${how}: ${text}`);
    check([text], "whole");
    check([...text], "one character at a time");
    for (let cut = 1; cut < text.length; cut++) {
      check([text.slice(0, cut), text.slice(cut)], `cut at ${cut}`);
    }
    for (let seed = 1; seed <= 20; seed++) {
      const next = random(seed);
      const chunks: string[] = [];
      for (let at = 0; at < text.length;) {
        const size = 1 + Math.floor(next() * 12);
        chunks.push(text.slice(at, at + size));
        at += size;
      }
      check(chunks, `seed ${seed}`);
    }
  }
});
