/**
 * Qwen3-Coder's XML tool calls against the cases of SGLang's own detector tests
 * (`test/srt/test_function_call_parser.py`, `TestQwen3CoderDetector`), plus what this gateway
 * keeps that SGLang drops: text around calls, and calls that cannot be used, as text.
 */
import assert from "node:assert/strict";
import { parseQwen3CoderCalls, type ToolSchemas, typedValue } from "../../lib/output/mod.ts";

const TOOLS: ToolSchemas = new Map([
  ["get_current_weather", {
    type: "object",
    properties: {
      location: { type: "string" },
      unit: { type: "string", enum: ["celsius", "fahrenheit"] },
      days: { type: "integer" },
    },
    required: ["location"],
  }],
  ["sql_interpreter", {
    type: "object",
    properties: { query: { type: "string" }, dry_run: { type: "boolean" } },
  }],
  ["TodoWrite", {
    type: "object",
    properties: {
      todos: {
        type: "array",
        items: { type: "object", properties: { content: { type: "string" } } },
      },
    },
  }],
]);

Deno.test("parseQwen3CoderCalls() reads SGLang's cases: one call, typed values, text before, several calls", () => {
  assert.deepEqual(parseQwen3CoderCalls("This is plain text without any tool calls.", TOOLS), {
    parts: [{ type: "text", text: "This is plain text without any tool calls." }],
    illFormed: [],
  });
  assert.deepEqual(
    parseQwen3CoderCalls(
      "<tool_call>\n<function=get_current_weather>\n<parameter=location>Boston</parameter>\n" +
        "<parameter=unit>celsius</parameter>\n<parameter=days>3</parameter>\n</function>\n</tool_call>",
      TOOLS,
    ).parts,
    [{
      type: "tool_call",
      name: "get_current_weather",
      input: { location: "Boston", unit: "celsius", days: 3 },
    }],
  );
  assert.deepEqual(
    parseQwen3CoderCalls(
      "Let me check the weather for you.\n\n<tool_call>\n<function=get_current_weather>\n" +
        "<parameter=location>New York</parameter>\n</function>\n</tool_call>",
      TOOLS,
    ).parts,
    [
      { type: "text", text: "Let me check the weather for you." },
      { type: "tool_call", name: "get_current_weather", input: { location: "New York" } },
    ],
  );
  assert.deepEqual(
    parseQwen3CoderCalls(
      "<tool_call>\n<function=get_current_weather>\n<parameter=location>New York</parameter>\n" +
        "</function>\n</tool_call>\n<tool_call>\n<function=sql_interpreter>\n" +
        "<parameter=query>SELECT * FROM users</parameter>\n<parameter=dry_run>True</parameter>\n" +
        "</function>\n</tool_call>",
      TOOLS,
    ).parts,
    [
      { type: "tool_call", name: "get_current_weather", input: { location: "New York" } },
      {
        type: "tool_call",
        name: "sql_interpreter",
        input: { query: "SELECT * FROM users", dry_run: true },
      },
    ],
  );
});

Deno.test("parseQwen3CoderCalls() keeps multi-line values whole, one newline trimmed each side", () => {
  const code = "def f():\n    return 1\n";
  const { parts } = parseQwen3CoderCalls(
    `<tool_call>\n<function=sql_interpreter>\n<parameter=query>\n${code}\n</parameter>\n` +
      "<parameter=dry_run>\nfalse\n</parameter>\n</function>\n</tool_call>",
    TOOLS,
  );
  assert.deepEqual(parts, [{
    type: "tool_call",
    name: "sql_interpreter",
    input: { query: code, dry_run: false },
  }]);
  // An array parameter is JSON; an unterminated parameter ends at the next one or the function.
  assert.deepEqual(
    parseQwen3CoderCalls(
      '<tool_call>\n<function=TodoWrite>\n<parameter=todos>\n[{"content": "a"}]\n</function>\n</tool_call>',
      TOOLS,
    ).parts,
    [{ type: "tool_call", name: "TodoWrite", input: { todos: [{ content: "a" }] } }],
  );
});

Deno.test("parseQwen3CoderCalls() leaves a call it cannot use as text, with the reason", () => {
  const cases: [string, string][] = [
    [
      "<tool_call>\n<function=rm_rf>\n</function>\n</tool_call>",
      'tool call names an unknown tool "rm_rf"',
    ],
    [
      "<tool_call>\n<function=get_current_weather>\n<parameter=location>x",
      "tool call without a closing </tool_call>",
    ],
    ["<tool_call>\nno function here\n</tool_call>", "tool call has no <function=…>"],
    [
      "<tool_call>\n<function=get_current_weather>\n<parameter=__proto__>\n{}\n</parameter>\n</function>\n</tool_call>",
      'arguments of "get_current_weather" at __proto__: key "__proto__" is not allowed',
    ],
  ];
  for (const [text, reason] of cases) {
    const parsed = parseQwen3CoderCalls(`Before.\n${text}`, TOOLS);
    assert.deepEqual(parsed.illFormed, [reason], text);
    assert.deepEqual(parsed.parts, [{ type: "text", text: `Before.\n${text}`.trim() }], text);
  }
});

Deno.test("typedValue() converts as SGLang's _convert_param_value does", () => {
  const cases: [string, unknown, unknown][] = [
    ["null", { type: "integer" }, null],
    ["NULL", { type: "string" }, null],
    ["5", undefined, "5"],
    ["5", { type: "string" }, "5"],
    [" 5 ", { type: "integer" }, 5],
    ["1_000", { type: "int" }, 1000],
    ["5.0", { type: "integer" }, "5.0"],
    ["5", { type: "number" }, 5],
    ["5.0", { type: "number" }, 5],
    ["1e3", { type: "float" }, 1000],
    ["inf", { type: "number" }, "inf"],
    ["True", { type: "boolean" }, true],
    ["yes", { type: "boolean" }, false],
    ['{"a": 1}', { type: "object" }, { a: 1 }],
    ["[1, None]", { type: "array" }, [1, null]],
    ["true", { type: ["string", "null"] }, "true"],
    ["True", { type: ["boolean", "null"] }, true],
    ["'quoted'", { type: "mystery" }, "quoted"],
    ["plain words", { type: "mystery" }, "plain words"],
    ["x", "not an object", "x"],
  ];
  for (const [value, schema, expected] of cases) {
    assert.deepEqual(typedValue(value, schema), expected, `${value} as ${JSON.stringify(schema)}`);
  }
  // Where this differs: SGLang's ast.literal_eval also reads Python's single-quoted dicts and
  // lists; here they stay text.
  assert.equal(typedValue("{'a': True}", { type: "object" }), "{'a': True}");
});
