import assert from "node:assert/strict";
import { detectFormats, ModelFormatError, resolveFormats } from "../../lib/output/mod.ts";
import { qwen3 } from "../_gateway.ts";

Deno.test("detectFormats() reads Qwen3's own template as hermes tool calls and <think> reasoning", async () => {
  const tokenizer = await qwen3();
  assert.deepEqual(detectFormats(tokenizer.chatTemplate), {
    toolCallParser: "qwen25",
    reasoningParser: "qwen3",
  });
});

Deno.test("detectFormats() names each family by the markers its template renders", () => {
  const cases: [string, { toolCallParser: string | null; reasoningParser: string | null }][] = [
    ["<tool_call>\n<function={{ name }}>\n<parameter={{ k }}>", {
      toolCallParser: "qwen3_coder",
      reasoningParser: null,
    }],
    ["<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{{ name }}<｜tool▁sep｜>", {
      toolCallParser: "deepseekv31",
      reasoningParser: "deepseek-v3",
    }],
    ["<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>", {
      toolCallParser: "deepseekv3",
      reasoningParser: "deepseek-v3",
    }],
    ["<|start|>assistant<|channel|>analysis<|message|>", {
      toolCallParser: "gpt-oss",
      reasoningParser: "gpt-oss",
    }],
    ["<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key><think>", {
      toolCallParser: "glm45",
      reasoningParser: "glm45",
    }],
    ["<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key><think>", {
      toolCallParser: "glm47",
      reasoningParser: "glm45",
    }],
    ["<|tool_calls_section_begin|><|tool_call_begin|>functions.{{ name }}", {
      toolCallParser: "kimi_k2",
      reasoningParser: null,
    }],
    ["{{ message.content }}", { toolCallParser: null, reasoningParser: null }],
  ];
  for (const [template, expected] of cases) {
    assert.deepEqual(detectFormats(template), expected, template);
  }
});

Deno.test("resolveFormats() takes the configured parsers over the detected ones and refuses what it cannot parse", () => {
  const qwen = "<tool_call>\n{{ call | tojson }}\n</tool_call><think>";
  const none = { toolCallParser: null, reasoningParser: null };
  assert.deepEqual(resolveFormats(qwen, none), {
    toolCallParser: "qwen25",
    reasoningParser: "qwen3",
  });
  assert.deepEqual(resolveFormats(qwen, { toolCallParser: "qwen", reasoningParser: "none" }), {
    toolCallParser: "qwen",
    reasoningParser: null,
  });
  // A template the gateway cannot read can still be served as a format it can, when told.
  assert.deepEqual(
    resolveFormats("<function=f><parameter=k>", {
      toolCallParser: "qwen25",
      reasoningParser: null,
    }),
    { toolCallParser: "qwen25", reasoningParser: null },
  );
  const refusals: [
    string,
    { toolCallParser: string | null; reasoningParser: string | null },
    string,
    RegExp,
  ][] = [
    [
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>",
      none,
      "TOOL_CALL_PARSER",
      /^The chat template speaks deepseekv3 \(detected\): this gateway does not parse deepseekv3 output yet \(supported: qwen25, qwen, qwen3_coder, deepseekv31, gpt-oss, glm, glm45, glm47, kimi_k2\)$/,
    ],
    [
      qwen,
      { toolCallParser: "mistral", reasoningParser: null },
      "TOOL_CALL_PARSER",
      /^TOOL_CALL_PARSER=mistral: this gateway does not parse/,
    ],
    [
      qwen,
      { toolCallParser: "gpt-oss", reasoningParser: "qwen3" },
      "REASONING_PARSER",
      /^REASONING_PARSER=qwen3 does not go with TOOL_CALL_PARSER=gpt-oss: harmony's channels/,
    ],
    [
      qwen,
      { toolCallParser: null, reasoningParser: "gpt-oss" },
      "REASONING_PARSER",
      /^REASONING_PARSER=gpt-oss does not go with TOOL_CALL_PARSER=qwen25/,
    ],
    [
      qwen,
      { toolCallParser: "hermes3", reasoningParser: null },
      "TOOL_CALL_PARSER",
      /^TOOL_CALL_PARSER=hermes3 is not a parser SGLang names/,
    ],
    [
      qwen,
      { toolCallParser: null, reasoningParser: "deepseek-r1" },
      "REASONING_PARSER",
      /^REASONING_PARSER=deepseek-r1: this gateway does not parse/,
    ],
    [
      "{{ message.content }}",
      none,
      "TOOL_CALL_PARSER",
      /renders no tool-call format this gateway recognises: set TOOL_CALL_PARSER/,
    ],
  ];
  for (const [template, configured, variable, message] of refusals) {
    assert.throws(() => resolveFormats(template, configured), (error: unknown) => {
      assert.ok(error instanceof ModelFormatError);
      assert.equal(error.variable, variable);
      assert.match(error.message, message);
      return true;
    });
  }
});
