/**
 * Output parsed as it streams: for every family and every way of cutting an output into chunks,
 * the streamed events add up to what `parseOutput` makes of the whole text. SGLang's own
 * streaming chunk sequences come first; then every output of the table is cut at every place,
 * one character at a time, and at random.
 */
import assert from "node:assert/strict";
import { type ParseOptions, parseOutput, streamOutput } from "../../lib/output/mod.ts";
import { fold, FORMATS, TABLE, TOOLS } from "./_outputs.ts";
import { random } from "../_random.ts";

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
