/**
 * DeepSeek-V3.1's and Kimi K2's sections of tool calls, on the literal strings of SGLang's own
 * tests (`test_kimik2_detector.py`) and detector documentation (`deepseekv31_detector.py`).
 */
import assert from "node:assert/strict";
import { parseDeepSeekV31Calls, parseKimiK2Calls } from "../../lib/output/mod.ts";

const KIMI_TOOLS = new Set(["ReadFile", "get_weather", "mcp__portal__search-documents"]);

const kimi = (calls: string) => `<|tool_calls_section_begin|>${calls}<|tool_calls_section_end|>`;

Deno.test("parseKimiK2Calls() reads SGLang's cases: one call, two, text before, hyphenated names", () => {
  assert.deepEqual(
    parseKimiK2Calls(
      kimi(
        '<|tool_call_begin|>functions.ReadFile:0<|tool_call_argument_begin|>{"path": "/test.py"}<|tool_call_end|>',
      ),
      KIMI_TOOLS,
    ),
    {
      parts: [{ type: "tool_call", name: "ReadFile", input: { path: "/test.py" } }],
      illFormed: [],
    },
  );
  assert.deepEqual(
    parseKimiK2Calls(
      kimi(
        '<|tool_call_begin|>functions.ReadFile:0<|tool_call_argument_begin|>{"path": "/a.py"}<|tool_call_end|>' +
          '<|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>{"city": "Tokyo"}<|tool_call_end|>',
      ),
      KIMI_TOOLS,
    ).parts,
    [
      { type: "tool_call", name: "ReadFile", input: { path: "/a.py" } },
      { type: "tool_call", name: "get_weather", input: { city: "Tokyo" } },
    ],
  );
  assert.deepEqual(
    parseKimiK2Calls(
      "Let me check the file." +
        kimi(
          '<|tool_call_begin|>functions.ReadFile:0<|tool_call_argument_begin|>{"path": "/test.py"}<|tool_call_end|>',
        ),
      KIMI_TOOLS,
    ).parts,
    [
      { type: "text", text: "Let me check the file." },
      { type: "tool_call", name: "ReadFile", input: { path: "/test.py" } },
    ],
  );
  assert.deepEqual(
    parseKimiK2Calls(
      kimi(
        '<|tool_call_begin|>functions.mcp__portal__search-documents:0<|tool_call_argument_begin|>{"path": "/docs"}<|tool_call_end|>',
      ),
      KIMI_TOOLS,
    ).parts,
    [{ type: "tool_call", name: "mcp__portal__search-documents", input: { path: "/docs" } }],
  );
  assert.deepEqual(parseKimiK2Calls("Just a normal response.", KIMI_TOOLS), {
    parts: [{ type: "text", text: "Just a normal response." }],
    illFormed: [],
  });
});

Deno.test("parseDeepSeekV31Calls() reads the documented section of two calls, and text before it", () => {
  const text = "Checking both.<｜tool▁calls▁begin｜>" +
    '<｜tool▁call▁begin｜>get_current_weather<｜tool▁sep｜>{"location": "Tokyo"}<｜tool▁call▁end｜>' +
    '<｜tool▁call▁begin｜>get_current_weather<｜tool▁sep｜>{"location": "Paris"}<｜tool▁call▁end｜>' +
    "<｜tool▁calls▁end｜>";
  assert.deepEqual(parseDeepSeekV31Calls(text, new Set(["get_current_weather"])), {
    parts: [
      { type: "text", text: "Checking both." },
      { type: "tool_call", name: "get_current_weather", input: { location: "Tokyo" } },
      { type: "tool_call", name: "get_current_weather", input: { location: "Paris" } },
    ],
    illFormed: [],
  });
});

Deno.test("a section with a call it cannot use, or without its closing marker, stays text with the reasons", () => {
  const tools = new Set(["ReadFile"]);
  const cases: [string, string[]][] = [
    [kimi("<|tool_call_begin|>functions.rm:0<|tool_call_argument_begin|>{}<|tool_call_end|>"), [
      'tool call names an unknown tool "rm"',
    ]],
    [
      kimi(
        "<|tool_call_begin|>functions.ReadFile:0<|tool_call_argument_begin|>{bad<|tool_call_end|>",
      ),
      ['arguments of "ReadFile" are not valid JSON'],
    ],
    [kimi("<|tool_call_begin|>ReadFile<|tool_call_argument_begin|>{}<|tool_call_end|>"), [
      "tool call without a name",
    ]],
    [
      kimi(
        '<|tool_call_begin|>functions.ReadFile:0<|tool_call_argument_begin|>{"__proto__": 1}<|tool_call_end|>',
      ),
      ['arguments of "ReadFile" at __proto__: key "__proto__" is not allowed'],
    ],
    ["<|tool_calls_section_begin|><|tool_call_begin|>functions.ReadFile:0", [
      "tool calls section without its closing marker",
    ]],
    [kimi(""), ["tool calls section holds no call"]],
  ];
  for (const [text, reasons] of cases) {
    const parsed = parseKimiK2Calls(`Before. ${text}`, tools);
    assert.deepEqual(
      parsed.illFormed.map((r) => r.replace(/: .*reserved.*/, ": a reserved key")),
      reasons,
      text,
    );
    assert.deepEqual(parsed.parts, [{ type: "text", text: `Before. ${text}` }], text);
  }
});
