/**
 * GLM-4.5/4.6 (`glm45`) and GLM-4.7 (`glm47`) tool calls on the literal strings of SGLang's
 * tests (`test_function_call_parser.py`), then the gateway's own rules: typing by schema, text
 * kept around calls, unusable and cut-short calls left as text.
 */
import assert from "node:assert/strict";
import { inferType, parseGlmCalls, type ToolSchemas } from "../../lib/output/mod.ts";

const TOOLS: ToolSchemas = new Map<string, Record<string, unknown>>([
  ["get_weather", {
    type: "object",
    properties: { city: { type: "string" }, date: { type: "string" } },
  }],
  ["todo_write", { type: "object", properties: { todos: { type: "array" } } }],
  ["apply_diff", {
    type: "object",
    properties: { old_string: { type: "string" }, new_string: { type: "string" } },
  }],
  ["wait", {
    type: "object",
    properties: {
      seconds: { type: "number" },
      count: { type: "integer" },
      loud: { type: "boolean" },
      label: { type: "string" },
      mode: { enum: ["fast", "slow"] },
    },
  }],
  ["ping", { type: "object", properties: {} }],
]);

const weather = (city: string, date: string) => ({
  type: "tool_call",
  name: "get_weather",
  input: { city, date },
});

Deno.test("parseGlmCalls() reads SGLang's glm45 cases: one call, two, an unknown tool", () => {
  const one = "<tool_call>get_weather\n" +
    "<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n" +
    "<arg_key>date</arg_key>\n<arg_value>2024-06-27</arg_value>\n" +
    "</tool_call>";
  assert.deepEqual(parseGlmCalls(one, TOOLS, "glm45"), {
    parts: [weather("Beijing", "2024-06-27")],
    illFormed: [],
  });
  const two = one + "<tool_call>get_weather\n" +
    "<arg_key>city</arg_key>\n<arg_value>Shanghai</arg_value>\n" +
    "<arg_key>date</arg_key>\n<arg_value>2024-06-28</arg_value>\n" +
    "</tool_call>";
  assert.deepEqual(parseGlmCalls(two, TOOLS, "glm45").parts, [
    weather("Beijing", "2024-06-27"),
    weather("Shanghai", "2024-06-28"),
  ]);
  const invalid =
    "<tool_call>invalid_func\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n</tool_call>";
  assert.deepEqual(parseGlmCalls(invalid, TOOLS, "glm45"), {
    parts: [{ type: "text", text: invalid }],
    illFormed: ['tool call names an unknown tool "invalid_func"'],
  });
});

Deno.test("parseGlmCalls() reads SGLang's glm45 escaped JSON and literal \\n, and keeps whitespace in values", () => {
  const todos = [
    { id: "1", task: "Check for hard-coded issues in the backend code", status: "in_progress" },
    { id: "2", task: "Check for hard-coded issues in the frontend code", status: "pending" },
  ];
  const json = JSON.stringify(todos).replaceAll('","', '", "').replaceAll('":"', '": "');
  const plain =
    `<tool_call>todo_write\n<arg_key>todos</arg_key>\n<arg_value>${json}</arg_value>\n</tool_call>`;
  // The model wrote the JSON escaped, and `\n` as two characters.
  const escaped = `<tool_call>todo_write\\n<arg_key>todos</arg_key>\\n<arg_value>${
    json.replaceAll('"', '\\"')
  }</arg_value>\n</tool_call>`;
  for (const text of [plain, escaped]) {
    assert.deepEqual(
      parseGlmCalls(text, TOOLS, "glm45").parts,
      [{ type: "tool_call", name: "todo_write", input: { todos } }],
      text,
    );
  }
  // A Windows path inside escaped JSON: `\\\\` is one backslash once both layers are read.
  assert.deepEqual(
    parseGlmCalls(
      String
        .raw`<tool_call>todo_write\n<arg_key>todos</arg_key>\n<arg_value>[{\"id\": \"1\", \"task\": \"Check file at C:\\\\Users\\\\test.txt\", \"status\": \"pending\"}]</arg_value></tool_call>`,
      TOOLS,
      "glm45",
    ).parts,
    [{
      type: "tool_call",
      name: "todo_write",
      input: { todos: [{ id: "1", task: "Check file at C:\\Users\\test.txt", status: "pending" }] },
    }],
  );
  const diff = "<tool_call>apply_diff\n" +
    "<arg_key>old_string</arg_key>\n<arg_value>    indented code</arg_value>\n" +
    "<arg_key>new_string</arg_key>\n<arg_value>        also indented</arg_value>\n" +
    "</tool_call>";
  assert.deepEqual(parseGlmCalls(diff, TOOLS, "glm45").parts, [{
    type: "tool_call",
    name: "apply_diff",
    input: { old_string: "    indented code", new_string: "        also indented" },
  }]);
});

Deno.test("parseGlmCalls() reads SGLang's glm47 cases: no newlines, two calls, an unknown tool, no arguments", () => {
  const one = "<tool_call>get_weather" +
    "<arg_key>city</arg_key><arg_value>Beijing</arg_value>" +
    "<arg_key>date</arg_key><arg_value>2024-06-27</arg_value>" +
    "</tool_call>";
  assert.deepEqual(parseGlmCalls(one, TOOLS, "glm47"), {
    parts: [weather("Beijing", "2024-06-27")],
    illFormed: [],
  });
  assert.deepEqual(parseGlmCalls(`${one}${one.replace("Beijing", "Shanghai")}`, TOOLS, "glm47"), {
    parts: [weather("Beijing", "2024-06-27"), weather("Shanghai", "2024-06-27")],
    illFormed: [],
  });
  const invalid =
    "<tool_call>invalid_func<arg_key>city</arg_key><arg_value>Beijing</arg_value></tool_call>";
  assert.deepEqual(parseGlmCalls(invalid, TOOLS, "glm47").illFormed, [
    'tool call names an unknown tool "invalid_func"',
  ]);
  assert.deepEqual(parseGlmCalls("<tool_call>ping</tool_call>", TOOLS, "glm47").parts, [
    { type: "tool_call", name: "ping", input: {} },
  ]);
});

Deno.test("parseGlmCalls() types values by the schema, keeps text around calls, and leaves a cut call as text", () => {
  const call = "<tool_call>wait" +
    "<arg_key>seconds</arg_key><arg_value>1.5</arg_value>" +
    "<arg_key>count</arg_key><arg_value>3</arg_value>" +
    "<arg_key>loud</arg_key><arg_value>true</arg_value>" +
    "<arg_key>label</arg_key><arg_value>true</arg_value>" +
    '<arg_key>mode</arg_key><arg_value>"fast"</arg_value>' +
    '<arg_key>extra</arg_key><arg_value>{"a": [1]}</arg_value>' +
    "</tool_call>";
  const parsed = parseGlmCalls(`Waiting.\n${call}\nDone.`, TOOLS, "glm47");
  assert.deepEqual(parsed.illFormed, []);
  assert.equal(parsed.parts.length, 3);
  assert.deepEqual(parsed.parts[0], { type: "text", text: "Waiting." });
  assert.deepEqual(parsed.parts[2], { type: "text", text: "Done." });
  // A string parameter keeps what the model wrote; a JSON string gives its content.
  assert.deepEqual((parsed.parts[1] as { input: unknown }).input, {
    seconds: 1.5,
    count: 3,
    loud: true,
    label: "true",
    mode: "fast",
    extra: { a: [1] },
  });
  // A key the gateway refuses in requests would make the client's echo fail: the call stays text.
  const proto = "<tool_call>wait<arg_key>__proto__</arg_key><arg_value>x</arg_value></tool_call>";
  assert.deepEqual(parseGlmCalls(proto, TOOLS, "glm47"), {
    parts: [{ type: "text", text: proto }],
    illFormed: ['arguments of "wait" at __proto__: key "__proto__" is not allowed'],
  });
  // A number written as a JSON string still becomes a number.
  assert.deepEqual(
    parseGlmCalls(
      '<tool_call>wait<arg_key>seconds</arg_key><arg_value>"2e3"</arg_value></tool_call>',
      TOOLS,
      "glm47",
    ).parts,
    [{ type: "tool_call", name: "wait", input: { seconds: 2000 } }],
  );
  const cut = "<tool_call>wait<arg_key>seconds</arg_key><arg_val";
  assert.deepEqual(parseGlmCalls(`Waiting.${cut}`, TOOLS, "glm47"), {
    parts: [{ type: "text", text: `Waiting.${cut}` }],
    illFormed: ["tool call without a closing </tool_call>"],
  });
});

Deno.test("inferType() reads a parameter's schema as SGLang's infer_type_from_json_schema does", () => {
  const cases: [unknown, string | null][] = [
    [{ type: "integer" }, "integer"],
    [{ type: ["null", "number"] }, "number"],
    [{ type: ["null"] }, "string"],
    [{ anyOf: [{ type: "integer" }, { type: "integer" }] }, "integer"],
    [{ anyOf: [{ type: "integer" }, { type: "string" }] }, "string"],
    [{ oneOf: [{ type: "integer" }, { type: "boolean" }] }, "integer"],
    [{ enum: [1, 2] }, "integer"],
    [{ enum: ["a", 1] }, "string"],
    [{ enum: [] }, "string"],
    [{ allOf: [{ type: "string" }, { type: "object" }] }, "object"],
    [{ allOf: [{ description: "x" }] }, "string"],
    [{ properties: {} }, "object"],
    [{ items: {} }, "array"],
    [{ description: "anything" }, null],
    ["string", null],
  ];
  for (const [schema, type] of cases) assert.equal(inferType(schema), type, JSON.stringify(schema));
});
