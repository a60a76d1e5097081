import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import {
  buildMessage,
  encodeSse,
  errorEvent,
  type Message,
  messageEvents,
  PING_EVENT,
  signThinking,
  type SseEvent,
} from "../../lib/anthropic/mod.ts";

const USAGE = {
  input_tokens: 120,
  output_tokens: 30,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};
const sign = (thinking: string) =>
  signThinking("secret-secret-secret-0123456789", "sess_1", thinking);

/** A message with thinking, text and two tool calls. */
function fullMessage(): Message {
  return buildMessage({
    rid: "r42",
    model: "qwen3-test",
    blocks: [
      { type: "thinking", thinking: "List, then read." },
      { type: "text", text: "Looking around." },
      { type: "tool_call", name: "Bash", input: { command: "ls -la", env: { A: "1" } } },
      { type: "tool_call", name: "Read", input: {} },
    ],
    finish: { kind: "end_of_turn" },
    usage: USAGE,
    sign,
  });
}

/** The events of one block index, in order. */
const ofBlock = (events: SseEvent[], index: number) => events.filter((e) => e.data.index === index);
/** Concatenated delta field `field` of one block's deltas of type `type`. */
const joined = (events: SseEvent[], index: number, type: string, field: string) =>
  ofBlock(events, index)
    .filter((e) => e.event === "content_block_delta")
    .map((e) => e.data.delta as Record<string, string>)
    .filter((delta) => delta.type === type)
    .map((delta) => delta[field])
    .join("");

Deno.test("messageEvents() orders events as the Anthropic grammar requires", () => {
  const events = messageEvents(fullMessage());
  assert.deepEqual(events.map((e) => [e.event, e.data.index ?? null]), [
    ["message_start", null],
    ["content_block_start", 0],
    ["content_block_delta", 0],
    ["content_block_delta", 0],
    ["content_block_stop", 0],
    ["content_block_start", 1],
    ["content_block_delta", 1],
    ["content_block_stop", 1],
    ["content_block_start", 2],
    ["content_block_delta", 2],
    ["content_block_stop", 2],
    ["content_block_start", 3],
    ["content_block_delta", 3],
    ["content_block_stop", 3],
    ["message_delta", null],
    ["message_stop", null],
  ]);
  for (const event of events) assert.equal(event.data.type, event.event);
});

Deno.test("messageEvents() starts with the message without content or stop reason", () => {
  const message = fullMessage();
  assert.deepEqual(messageEvents(message)[0].data, {
    type: "message_start",
    message: {
      ...message,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...USAGE, output_tokens: 0 },
    },
  });
});

Deno.test("messageEvents() sends thinking deltas, then the signature, then the block stop", () => {
  const message = fullMessage();
  const events = ofBlock(messageEvents(message), 0);
  assert.deepEqual(events.map((e) => e.data), [
    {
      type: "content_block_start",
      index: 0,
      content_block: { type: "thinking", thinking: "", signature: "" },
    },
    {
      type: "content_block_delta",
      index: 0,
      delta: { type: "thinking_delta", thinking: "List, then read." },
    },
    {
      type: "content_block_delta",
      index: 0,
      delta: { type: "signature_delta", signature: sign("List, then read.") },
    },
    { type: "content_block_stop", index: 0 },
  ]);
});

Deno.test("messageEvents() opens tool_use with empty input and sends it only as JSON deltas", () => {
  const message = fullMessage();
  const events = messageEvents(message);
  for (const index of [2, 3]) {
    const block = message.content[index];
    assert.ok(block.type === "tool_use");
    assert.deepEqual(ofBlock(events, index)[0].data, {
      type: "content_block_start",
      index,
      content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
    });
    assert.deepEqual(
      JSON.parse(joined(events, index, "input_json_delta", "partial_json")),
      block.input,
    );
  }
});

Deno.test("messageEvents() ends with message_delta carrying stop reason and usage, then message_stop", () => {
  const message = buildMessage({
    rid: "r1",
    model: "m",
    blocks: [{ type: "text", text: "Hi" }],
    finish: { kind: "stop_sequence", matched: "END" },
    usage: USAGE,
    sign,
  });
  assert.deepEqual(messageEvents(message).slice(-2).map((e) => e.data), [
    {
      type: "message_delta",
      delta: { stop_reason: "stop_sequence", stop_sequence: "END" },
      usage: USAGE,
    },
    { type: "message_stop" },
  ]);
});

Deno.test("messageEvents() splits long text into several deltas that join to the text", () => {
  const text = "0123456789".repeat(100) + "\nend";
  const message = { ...fullMessage(), content: [{ type: "text" as const, text }] };
  const deltas = ofBlock(messageEvents(message), 0).filter((e) =>
    e.event === "content_block_delta"
  );
  assert.ok(deltas.length > 1, `${deltas.length} deltas`);
  assert.equal(joined(messageEvents(message), 0, "text_delta", "text"), text);
});

Deno.test("messageEvents() never splits a surrogate pair between deltas", () => {
  const text = "a" + "😀".repeat(600);
  const message = {
    ...fullMessage(),
    content: [{ type: "text" as const, text }, {
      type: "thinking" as const,
      thinking: text,
      signature: "s",
    }],
  };
  const events = messageEvents(message);
  for (
    const [index, type, field] of [[0, "text_delta", "text"], [
      1,
      "thinking_delta",
      "thinking",
    ]] as const
  ) {
    const pieces = ofBlock(events, index)
      .filter((e) =>
        e.event === "content_block_delta" && (e.data.delta as { type: string }).type === type
      )
      .map((e) => (e.data.delta as Record<string, string>)[field]);
    assert.ok(pieces.length > 1);
    for (const piece of pieces) assert.ok(piece.isWellFormed(), JSON.stringify(piece.slice(-2)));
    assert.equal(pieces.join(""), text);
  }
});

Deno.test("messageEvents() sends one empty delta for empty text", () => {
  const message = { ...fullMessage(), content: [{ type: "text" as const, text: "" }] };
  assert.deepEqual(ofBlock(messageEvents(message), 0).map((e) => e.data), [
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "" } },
    { type: "content_block_stop", index: 0 },
  ]);
});

Deno.test("encodeSse() writes an event line, one JSON data line and a blank line", () => {
  const event: SseEvent = {
    event: "content_block_delta",
    data: {
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: "a\nb\r\n🎉" },
    },
  };
  const wire = new TextDecoder().decode(encodeSse(event));
  assert.equal(wire, `event: content_block_delta\ndata: ${JSON.stringify(event.data)}\n\n`);
  assert.equal(wire.split("\n").length, 4);
  assert.equal(
    new TextDecoder().decode(encodeSse(PING_EVENT)),
    'event: ping\ndata: {"type":"ping"}\n\n',
  );
});

Deno.test("errorEvent() wraps an error type and message", () => {
  assert.deepEqual(errorEvent("overloaded_error", "Overloaded"), {
    event: "error",
    data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
  });
});

Deno.test("messageEvents() encoded as SSE accumulate to the same message in the Anthropic SDK", async () => {
  const long = "x".repeat(700) + "🎉".repeat(300);
  const message = { ...fullMessage() };
  message.content = [...message.content, { type: "text", text: long }];
  const body = new Blob(
    [PING_EVENT, ...messageEvents(message)].map((event) => encodeSse(event) as BlobPart),
  );
  const client = new Anthropic({
    apiKey: "test",
    baseURL: "http://gateway.invalid",
    maxRetries: 0,
    fetch: () =>
      Promise.resolve(
        new Response(body.stream(), { headers: { "content-type": "text/event-stream" } }),
      ),
  });
  const final = await client.messages
    .stream({ model: "qwen3-test", max_tokens: 64, messages: [{ role: "user", content: "hi" }] })
    .finalMessage();
  const { parsed_output: _, ...accumulated } = final as typeof final & { parsed_output?: unknown };
  assert.deepEqual(JSON.parse(JSON.stringify(accumulated)), JSON.parse(JSON.stringify(message)));
});
