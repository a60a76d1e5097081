import assert from "node:assert/strict";
import { InvalidRequestError } from "../../lib/errors/mod.ts";
import { ResponseCreateParams, toMessagesRequest } from "../../lib/responses/mod.ts";

const parse = (body: Record<string, unknown>) =>
  ResponseCreateParams.parse({ model: "m", ...body });

Deno.test("toMessagesRequest() reads Codex's input: developer messages as the system prompt, calls and outputs as tool blocks", () => {
  const request = parse({
    tools: [
      { type: "function", name: "exec_command", parameters: { type: "object" }, strict: false },
      { type: "web_search", external_web_access: true },
      { type: "namespace", name: "multi_agent_v1", tools: [] },
    ],
    input: [
      {
        type: "message",
        id: "msg_1",
        role: "developer",
        content: [{ type: "input_text", text: "You are Codex." }],
      },
      {
        type: "message",
        id: "msg_2",
        role: "developer",
        content: [{ type: "input_text", text: "Permissions." }],
      },
      {
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: "<environment_context/>" }],
      },
      { role: "user", content: "Create hi.txt" },
      {
        type: "reasoning",
        id: "rs_1",
        summary: [],
        content: null,
        encrypted_content: "Use the shell.",
      },
      {
        type: "function_call",
        id: "fc_1",
        call_id: "call_1",
        name: "exec_command",
        arguments: '{"cmd":"echo hi > hi.txt"}',
        status: "completed",
      },
      {
        type: "function_call_output",
        id: "fco_1",
        call_id: "call_1",
        output: "Process exited with code 0",
      },
    ],
  });
  assert.deepEqual(toMessagesRequest(request), {
    model: "m",
    max_tokens: 0,
    system: "You are Codex.\nPermissions.",
    messages: [
      { role: "user", content: [{ type: "text", text: "<environment_context/>" }] },
      { role: "user", content: "Create hi.txt" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Use the shell.", signature: "" },
          {
            type: "tool_use",
            id: "call_1",
            name: "exec_command",
            input: { cmd: "echo hi > hi.txt" },
          },
        ],
      },
      {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "call_1",
          content: "Process exited with code 0",
        }],
      },
    ],
    // Built-in and hosted tools are not shown to the model.
    tools: [{ name: "exec_command", input_schema: { type: "object" } }],
  });
});

Deno.test("toMessagesRequest() merges an assistant turn's items and a user message after tool outputs", () => {
  const request = parse({
    instructions: "Be brief.",
    input: [
      { role: "user", content: "hi" },
      { type: "reasoning", summary: [{ type: "summary_text", text: "Short." }] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Checking." }] },
      { type: "function_call", call_id: "a", name: "f", arguments: "" },
      { type: "function_call", call_id: "b", name: "g", arguments: '{"x":1}' },
      { type: "function_call_output", call_id: "a", output: [{ type: "input_text", text: "one" }] },
      { type: "function_call_output", call_id: "b", output: "two" },
      { role: "user", content: "and?" },
      { role: "assistant", content: "Done." },
      { role: "developer", content: "Later note." },
      { role: "user", content: "ok" },
    ],
  });
  assert.deepEqual(toMessagesRequest(request).messages, [
    { role: "user", content: "hi" },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Short.", signature: "" },
        { type: "text", text: "Checking." },
        { type: "tool_use", id: "a", name: "f", input: {} },
        { type: "tool_use", id: "b", name: "g", input: { x: 1 } },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "a", content: [{ type: "text", text: "one" }] },
        { type: "tool_result", tool_use_id: "b", content: "two" },
        { type: "text", text: "and?" },
      ],
    },
    { role: "assistant", content: [{ type: "text", text: "Done." }] },
    { role: "system", content: "Later note." },
    { role: "user", content: "ok" },
  ]);
  assert.equal(toMessagesRequest(request).system, "Be brief.");
  assert.deepEqual(toMessagesRequest(parse({ input: "hello" })).messages, [
    { role: "user", content: "hello" },
  ]);
});

Deno.test("toMessagesRequest() refuses what it cannot serve, naming the input's own path", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [
      { input: [{ role: "user", content: "x" }, { type: "item_reference", id: "msg_1" }] },
      /^input\.1\.type: "item_reference"/,
    ],
    [{
      input: [{ role: "user", content: "x" }, {
        type: "function_call",
        call_id: "c",
        name: "f",
        arguments: "{}",
      }],
    }, /^input\.1: .*prefill/],
    [{
      input: [{ role: "user", content: "x" }, {
        type: "function_call",
        call_id: "c",
        name: "f",
        arguments: "[]",
      }, { type: "function_call_output", call_id: "c", output: "" }],
    }, /^input\.1\.arguments: must be a JSON object/],
    [
      { input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] },
      /^input\.0\.content\.0: input_image parts are not supported/,
    ],
    [{ input: [{ role: "developer", content: "only" }] }, /^input: at least one user message/],
    [{
      input: [{ role: "system", content: [{ type: "input_image" }] }, {
        role: "user",
        content: "x",
      }],
    }, /^input\.0\.content\.0: system messages take text parts only/],
  ];
  for (const [body, message] of cases) {
    assert.throws(() => toMessagesRequest(parse(body), { images: "reject" }), (error: unknown) => {
      assert.ok(error instanceof InvalidRequestError, String(error));
      assert.match(error.message, message);
      return true;
    }, JSON.stringify(body));
  }
  // Under the placeholder policy (the default) an image is lowered with its source, not refused.
  const image = parse({
    input: [{
      role: "user",
      content: [
        { type: "input_image", image_url: "data:image/gif;base64,R0lGODlh" },
        { type: "input_image", file_id: "file-1" },
        { type: "input_file", file_url: "https://example.com/a.pdf" },
      ],
    }],
  });
  assert.deepEqual(toMessagesRequest(image).messages, [{
    role: "user",
    content: [
      { type: "image", source: { type: "base64", media_type: "image/gif", data: "R0lGODlh" } },
      { type: "image", source: { type: "file", file_id: "file-1" } },
      { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } },
    ],
  }]);
});

Deno.test("toMessagesRequest() adds nothing for a reasoning item whose text was not echoed", () => {
  const request = parse({
    input: [
      { role: "user", content: "hi" },
      { type: "reasoning", summary: [] },
      { type: "function_call", call_id: "a", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "a", output: "ok" },
    ],
  });
  assert.deepEqual(toMessagesRequest(request).messages[1], {
    role: "assistant",
    content: [{ type: "tool_use", id: "a", name: "f", input: {} }],
  });
});
