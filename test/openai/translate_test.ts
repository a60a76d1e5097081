import assert from "node:assert/strict";
import { lowerMessages, messageIdentities } from "../../lib/anthropic/mod.ts";
import { ChatCompletionCreateParams, toMessagesRequest } from "../../lib/openai/mod.ts";

const parse = (body: unknown) => ChatCompletionCreateParams.parse(body);

Deno.test("toMessagesRequest() puts leading system and developer text first and folds later ones", () => {
  const translated = toMessagesRequest(parse({
    model: "m",
    messages: [
      { role: "system", content: "One." },
      { role: "developer", content: [{ type: "text", text: "Two." }] },
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      { role: "system", content: "Late note." },
      { role: "user", content: "again" },
    ],
  }));
  assert.equal(translated.system, "One.\nTwo.");
  assert.deepEqual(lowerMessages(translated.messages), [
    { role: "user", content: "hi" },
    { role: "assistant", content: "hello" },
    { role: "user", content: "<system-reminder>\nLate note.\n</system-reminder>" },
    { role: "user", content: "again" },
  ]);
});

Deno.test("toMessagesRequest() groups tool messages, and the user message after them, into one user message", () => {
  const call = (id: string, command: string) => ({
    id,
    type: "function",
    function: { name: "bash", arguments: JSON.stringify({ command }) },
  });
  const translated = toMessagesRequest(parse({
    model: "m",
    tools: [{ type: "function", function: { name: "bash" } }],
    messages: [
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: null,
        reasoning_content: "Two commands.",
        tool_calls: [call("a", "ls"), call("b", "pwd")],
      },
      { role: "tool", tool_call_id: "a", content: "x.txt" },
      { role: "tool", tool_call_id: "b", content: [{ type: "text", text: "/repo" }] },
      { role: "user", content: "and then?" },
    ],
  }));
  assert.deepEqual(translated.tools, [{
    name: "bash",
    input_schema: { type: "object", properties: {} },
  }]);
  assert.deepEqual(translated.messages, [
    { role: "user", content: "go" },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Two commands.", signature: "" },
        { type: "tool_use", id: "a", name: "bash", input: { command: "ls" } },
        { type: "tool_use", id: "b", name: "bash", input: { command: "pwd" } },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "a", content: "x.txt" },
        { type: "tool_result", tool_use_id: "b", content: [{ type: "text", text: "/repo" }] },
        { type: "text", text: "and then?" },
      ],
    },
  ]);
});

Deno.test("the same conversation has the same identities over either protocol, ids and reasoning aside", () => {
  const openai = toMessagesRequest(parse({
    model: "m",
    messages: [
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: "",
        reasoning_content: "kept by this client",
        tool_calls: [{ id: "call_9", type: "function", function: { name: "f", arguments: "" } }],
      },
      { role: "tool", tool_call_id: "call_9", content: "done" },
    ],
  }));
  const anthropic = [
    { role: "user", content: "go" },
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "f", input: {} }] },
    {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "done" }],
    },
  ];
  assert.deepEqual(messageIdentities(openai.messages), messageIdentities(anthropic as never));
});

Deno.test("toMessagesRequest() reads chat_template_kwargs.enable_thinking as the thinking switch", () => {
  const off = toMessagesRequest(parse({
    model: "m",
    messages: [{ role: "user", content: "hi" }],
    chat_template_kwargs: { enable_thinking: false },
  }));
  assert.deepEqual(off.thinking, { type: "disabled" });
  const unset = toMessagesRequest(
    parse({ model: "m", messages: [{ role: "user", content: "hi" }] }),
  );
  assert.equal(unset.thinking, undefined);
});

Deno.test("toMessagesRequest() maps images and files to blocks with their sources, refused under the reject policy", () => {
  const png =
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEElEQVR4nGP4z8DAwMDAAAAP/gH/lpL+4gAAAABJRU5ErkJggg==";
  const body = parse({
    model: "m",
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "see" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } },
        { type: "image_url", image_url: { url: "https://example.com/a.png" } },
        { type: "file", file: { file_data: "data:application/pdf;base64,JVBERi0xLjQK" } },
      ],
    }],
  });
  assert.throws(
    () => toMessagesRequest(body, { images: "reject" }),
    /messages\.0\.content\.1: image_url parts/,
  );
  const placed = toMessagesRequest(body);
  assert.deepEqual(placed.messages[0].content, [
    { type: "text", text: "see" },
    { type: "image", source: { type: "base64", media_type: "image/png", data: png } },
    { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
    {
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: "JVBERi0xLjQK" },
    },
  ]);
  assert.deepEqual(lowerMessages(placed.messages), [{
    role: "user",
    content: "see\n" +
      "[image omitted (PNG, 2×3 pixels, 73 bytes): the served model reads text only]\n" +
      "[image omitted (at a URL): the served model reads text only]\n" +
      "[document omitted (application/pdf, 9 bytes): the served model reads text only]",
  }]);
});
