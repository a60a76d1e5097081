import assert from "node:assert/strict";
import { parseOutput } from "../../lib/output/mod.ts";

const OPTIONS = {
  startsInReasoning: false,
  tools: new Map([["Bash", undefined], ["Read", undefined]]),
};

Deno.test("parseOutput() reads thinking, text and several tool calls in order", () => {
  const text = "<think>\nList, then read.\n</think>\n\nLooking around.\n" +
    '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>\n' +
    '<tool_call>\n{"name": "Read", "arguments": {"path": "README.md"}}\n</tool_call>';
  assert.deepEqual(parseOutput(text, OPTIONS), {
    blocks: [
      { type: "thinking", thinking: "List, then read." },
      { type: "text", text: "Looking around." },
      { type: "tool_call", name: "Bash", input: { command: "ls" } },
      { type: "tool_call", name: "Read", input: { path: "README.md" } },
    ],
    illFormed: [],
  });
});

Deno.test("parseOutput() reads a tool call that ends reasoning without </think>", () => {
  const text =
    '<think>\nRun it.\n<tool_call>\n{"name": "Bash", "arguments": {"command": "make"}}\n</tool_call>';
  assert.deepEqual(parseOutput(text, OPTIONS), {
    blocks: [
      { type: "thinking", thinking: "Run it." },
      { type: "tool_call", name: "Bash", input: { command: "make" } },
    ],
    illFormed: [],
  });
});

Deno.test("parseOutput() returns truncated reasoning as one thinking block", () => {
  assert.deepEqual(parseOutput("<think>\nHalf a thou", OPTIONS), {
    blocks: [{ type: "thinking", thinking: "Half a thou" }],
    illFormed: [],
  });
});

Deno.test("parseOutput() reads output as thinking when the prompt opened reasoning", () => {
  assert.deepEqual(
    parseOutput("plan\n</think>\n\nDone.", { ...OPTIONS, startsInReasoning: true }),
    {
      blocks: [{ type: "thinking", thinking: "plan" }, { type: "text", text: "Done." }],
      illFormed: [],
    },
  );
});

Deno.test("parseOutput() drops an empty thinking block", () => {
  assert.deepEqual(parseOutput("<think>\n\n</think>\n\nHello.", OPTIONS), {
    blocks: [{ type: "text", text: "Hello." }],
    illFormed: [],
  });
});

Deno.test("parseOutput() keeps a malformed call as text and reports it", () => {
  const bad = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"\n</tool_call>';
  assert.deepEqual(parseOutput(`<think>\nx\n</think>\n\nTrying.\n${bad}`, OPTIONS), {
    blocks: [{ type: "thinking", thinking: "x" }, { type: "text", text: `Trying.\n${bad}` }],
    illFormed: ["tool call is not valid JSON"],
  });
});

Deno.test("parseOutput() returns no blocks for empty output", () => {
  assert.deepEqual(parseOutput("", OPTIONS), { blocks: [], illFormed: [] });
});

Deno.test("parseOutput() reads DeepSeek-V3.1: reasoning the prompt opened, then a section of calls", () => {
  const formats = { toolCallParser: "deepseekv31", reasoningParser: "deepseek-v3" };
  const tools = new Map([["Bash", undefined], ["Read", undefined]]);
  const section = '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>Bash<｜tool▁sep｜>{"command": "ls"}' +
    '<｜tool▁call▁end｜><｜tool▁call▁begin｜>Read<｜tool▁sep｜>{"path": "a"}<｜tool▁call▁end｜>' +
    "<｜tool▁calls▁end｜>";
  assert.deepEqual(
    parseOutput(`Look first.</think>Listing.${section}`, {
      startsInReasoning: true,
      tools,
      formats,
    }),
    {
      blocks: [
        { type: "thinking", thinking: "Look first." },
        { type: "text", text: "Listing." },
        { type: "tool_call", name: "Bash", input: { command: "ls" } },
        { type: "tool_call", name: "Read", input: { path: "a" } },
      ],
      illFormed: [],
    },
  );
  // Cut short inside the section: the whole answer stays text.
  const cut = section.slice(0, 60);
  assert.deepEqual(parseOutput(`Listing.${cut}`, { startsInReasoning: false, tools, formats }), {
    blocks: [{ type: "text", text: `Listing.${cut}` }],
    illFormed: ["tool calls section without its closing marker"],
  });
  // Hermes-style calls are not DeepSeek's: text.
  const hermes = '<tool_call>\n{"name": "Bash", "arguments": {}}\n</tool_call>';
  assert.deepEqual(parseOutput(hermes, { startsInReasoning: false, tools, formats }).blocks, [
    { type: "text", text: hermes },
  ]);
});
