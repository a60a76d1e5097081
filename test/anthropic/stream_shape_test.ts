/**
 * The Messages API's stream shape as bytes: what it sends at once, while the engine works, as
 * output is sampled, at the end, and when the turn fails after the stream started.
 */
import assert from "node:assert/strict";
import { ENGINE_DOWN, text } from "../_stream_shapes.ts";
import { type Message, messageHead, messageStreamShape } from "../../lib/anthropic/mod.ts";

const RID = "0123456789abcdef";
const shape = () =>
  messageStreamShape({
    head: messageHead(RID, "m", 5),
    rid: RID,
    sign: (thinking) => `sig(${thinking})`,
  });

Deno.test("messageStreamShape() sends message_start at once, ping as its keep-alive, and no headers of its own", () => {
  const stream = shape();
  assert.equal(
    text(stream.head),
    "event: message_start\n" +
      'data: {"type":"message_start","message":{"id":"msg_0123456789abcdef","type":"message",' +
      '"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,' +
      '"usage":{"input_tokens":5,"output_tokens":0,"cache_creation_input_tokens":0,' +
      '"cache_read_input_tokens":0}}}\n\n',
  );
  assert.equal(text([stream.keepAlive]), 'event: ping\ndata: {"type":"ping"}\n\n');
  assert.deepEqual(stream.headers, {});
});

Deno.test("messageStreamShape() streams a thinking block signed as it closes and text as sampled, then ends the message", () => {
  const stream = shape();
  assert.equal(
    text(stream.content([
      { type: "thinking", index: 0, thinking: "Hm." },
      { type: "text", index: 1, text: "Hi" },
    ])),
    "event: content_block_start\n" +
      'data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking",' +
      '"thinking":"","signature":""}}\n\n' +
      "event: content_block_delta\n" +
      'data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta",' +
      '"thinking":"Hm."}}\n\n' +
      "event: content_block_delta\n" +
      'data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta",' +
      '"signature":"sig(Hm.)"}}\n\n' +
      "event: content_block_stop\n" +
      'data: {"type":"content_block_stop","index":0}\n\n' +
      "event: content_block_start\n" +
      'data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}\n\n' +
      "event: content_block_delta\n" +
      'data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}\n\n',
  );
  const head = messageHead(RID, "m", 5);
  const message: Message = {
    ...head,
    content: [
      { type: "thinking", thinking: "Hm.", signature: "sig(Hm.)" },
      { type: "text", text: "Hi" },
    ],
    usage: { ...head.usage, output_tokens: 3 },
  };
  assert.equal(
    text(stream.body(message)),
    "event: content_block_stop\n" +
      'data: {"type":"content_block_stop","index":1}\n\n' +
      "event: message_delta\n" +
      'data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},' +
      '"usage":{"input_tokens":5,"output_tokens":3,"cache_creation_input_tokens":0,' +
      '"cache_read_input_tokens":0}}\n\n' +
      "event: message_stop\n" +
      'data: {"type":"message_stop"}\n\n',
  );
});

Deno.test("messageStreamShape() reports a failure after the stream started as Anthropic's error event", () => {
  const failure = shape().failure(ENGINE_DOWN);
  assert.equal(
    text([failure]),
    "event: error\n" +
      'data: {"type":"error","error":{"type":"overloaded_error","message":"engine down"}}\n\n',
  );
});
