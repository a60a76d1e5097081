import assert from "node:assert/strict";
import { parseToolCalls } from "../../lib/output/mod.ts";

const TOOLS = new Set(["Bash", "Read"]);

/** A tool call as Qwen3 writes it, around any body. */
const call = (body: string) => `<tool_call>\n${body}\n</tool_call>`;

Deno.test("parseToolCalls() reads text followed by several tool calls", () => {
  const text = `I will look.\n${call('{"name": "Bash", "arguments": {"command": "ls"}}')}\n` +
    call(
      '{"name": "Read", "arguments": {"path": "a.md", "limit": 10, "nested": {"x": [1, null]}}}',
    );
  assert.deepEqual(parseToolCalls(text, TOOLS), {
    parts: [
      { type: "text", text: "I will look." },
      { type: "tool_call", name: "Bash", input: { command: "ls" } },
      {
        type: "tool_call",
        name: "Read",
        input: { path: "a.md", limit: 10, nested: { x: [1, null] } },
      },
    ],
    illFormed: [],
  });
});

Deno.test("parseToolCalls() returns plain text as one trimmed text part", () => {
  assert.deepEqual(parseToolCalls("\n  Hello there.\n", TOOLS), {
    parts: [{ type: "text", text: "Hello there." }],
    illFormed: [],
  });
  assert.deepEqual(parseToolCalls("", TOOLS), { parts: [], illFormed: [] });
});

Deno.test("parseToolCalls() preserves the order of text between tool calls", () => {
  const text = `A\n${call('{"name": "Bash", "arguments": {"command": "1"}}')}\nB\n` +
    `${call('{"name": "Read", "arguments": {"path": "2"}}')}\nC`;
  assert.deepEqual(parseToolCalls(text, TOOLS).parts, [
    { type: "text", text: "A" },
    { type: "tool_call", name: "Bash", input: { command: "1" } },
    { type: "text", text: "B" },
    { type: "tool_call", name: "Read", input: { path: "2" } },
    { type: "text", text: "C" },
  ]);
});

Deno.test('parseToolCalls() accepts "parameters" in place of "arguments"', () => {
  assert.deepEqual(
    parseToolCalls(call('{"name": "Bash", "parameters": {"command": "ls"}}'), TOOLS),
    {
      parts: [{ type: "tool_call", name: "Bash", input: { command: "ls" } }],
      illFormed: [],
    },
  );
});

Deno.test("parseToolCalls() decodes arguments sent as a JSON string", () => {
  assert.deepEqual(
    parseToolCalls(call('{"name": "Bash", "arguments": "{\\"command\\": \\"ls -la\\"}"}'), TOOLS),
    { parts: [{ type: "tool_call", name: "Bash", input: { command: "ls -la" } }], illFormed: [] },
  );
});

Deno.test("parseToolCalls() gives a call without arguments an empty input", () => {
  assert.deepEqual(parseToolCalls(call('{"name": "Bash"}'), TOOLS).parts, [
    { type: "tool_call", name: "Bash", input: {} },
  ]);
});

/** Each malformed body and the reason it is reported with. */
const MALFORMED: [string, string][] = [
  ['{"name": "Bash", "arguments": {"command": "ls"}', "tool call is not valid JSON"],
  ["not json at all", "tool call is not valid JSON"],
  ['["Bash", {"command": "ls"}]', "tool call is not a JSON object"],
  ['{"arguments": {"command": "ls"}}', "tool call has no name"],
  ['{"name": "", "arguments": {}}', "tool call has no name"],
  ['{"name": 7, "arguments": {}}', "tool call has no name"],
  ['{"name": "Write", "arguments": {"path": "x"}}', 'tool call names an unknown tool "Write"'],
  ['{"name": "Bash", "arguments": ["ls"]}', 'arguments of "Bash" are not a JSON object'],
  ['{"name": "Bash", "arguments": 3}', 'arguments of "Bash" are not a JSON object'],
  ['{"name": "Bash", "arguments": "ls -la"}', 'arguments of "Bash" are not a JSON object'],
  ['{"name": "Bash", "arguments": "[1, 2]"}', 'arguments of "Bash" are not a JSON object'],
];

for (const [body, reason] of MALFORMED) {
  Deno.test(`parseToolCalls() keeps a malformed call in place as text: ${reason} (${body})`, () => {
    const bad = call(body);
    const text = `Before.\n${
      call('{"name": "Bash", "arguments": {"command": "ok"}}')
    }\nMiddle ${bad} after.`;
    assert.deepEqual(parseToolCalls(text, TOOLS), {
      parts: [
        { type: "text", text: "Before." },
        { type: "tool_call", name: "Bash", input: { command: "ok" } },
        { type: "text", text: `Middle ${bad} after.` },
      ],
      illFormed: [reason],
    });
  });
}

Deno.test("parseToolCalls() keeps a call without a closing tag as text", () => {
  const text = `Start.\n${
    call('{"name": "Read", "arguments": {"path": "a"}}')
  }\nThen <tool_call>\n{"name": "Bash"`;
  assert.deepEqual(parseToolCalls(text, TOOLS), {
    parts: [
      { type: "text", text: "Start." },
      { type: "tool_call", name: "Read", input: { path: "a" } },
      { type: "text", text: 'Then <tool_call>\n{"name": "Bash"' },
    ],
    illFormed: ["tool call without a closing </tool_call>"],
  });
});

Deno.test("parseToolCalls() reports one reason per malformed call and keeps good ones", () => {
  const text = [
    call("{bad"),
    call('{"name": "Bash", "arguments": {"command": "ls"}}'),
    call('{"name": "Nope"}'),
  ].join("\n");
  assert.deepEqual(parseToolCalls(text, TOOLS), {
    parts: [
      { type: "text", text: call("{bad") },
      { type: "tool_call", name: "Bash", input: { command: "ls" } },
      { type: "text", text: call('{"name": "Nope"}') },
    ],
    illFormed: ["tool call is not valid JSON", 'tool call names an unknown tool "Nope"'],
  });
});

Deno.test("parseToolCalls() treats every name as unknown when no tools were offered", () => {
  const text = call('{"name": "Bash", "arguments": {}}');
  assert.deepEqual(parseToolCalls(text, new Set()), {
    parts: [{ type: "text", text }],
    illFormed: ['tool call names an unknown tool "Bash"'],
  });
});
