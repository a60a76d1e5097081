/**
 * The Responses API's stream shape as bytes: `response.created` and `response.in_progress` at
 * once, `: keep-alive` comments, the output's events as sampled, `response.completed`, and
 * `response.failed`; every event numbered in one sequence across the stream.
 */
import assert from "node:assert/strict";
import { ENGINE_DOWN, text } from "../_stream_shapes.ts";
import { buildResponse, responseHead, responseStreamShape } from "../../lib/responses/mod.ts";

const RID = "0123456789abcdef";
const REQUEST = { model: "m", input: "hi" };
const HEAD = responseHead(`resp_${RID}`, REQUEST, 7);
const ITEM = "msg_ec34c0bac75e743919bcf436";
const shape = () =>
  responseStreamShape({
    requestId: "req_1",
    head: HEAD,
    rid: RID,
    encrypted: false,
    namespaceOf: () => null,
  });

Deno.test("responseStreamShape() sends response.created and response.in_progress at once, keep-alive comments, and x-request-id", () => {
  const stream = shape();
  const head = JSON.stringify(HEAD);
  assert.equal(
    text(stream.head),
    "event: response.created\n" +
      `data: {"type":"response.created","sequence_number":0,"response":${head}}\n\n` +
      "event: response.in_progress\n" +
      `data: {"type":"response.in_progress","sequence_number":1,"response":${head}}\n\n`,
  );
  assert.equal(text([stream.keepAlive]), ": keep-alive\n\n");
  assert.deepEqual(stream.headers, { "x-request-id": "req_1" });
});

Deno.test("responseStreamShape() streams a message item as sampled and closes it at the end, numbering on", () => {
  const stream = shape();
  assert.equal(
    text(stream.content([{ type: "text", index: 0, text: "Hi" }])),
    "event: response.output_item.added\n" +
      'data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,' +
      `"item":{"type":"message","id":"${ITEM}","role":"assistant","status":"in_progress",` +
      '"content":[]}}\n\n' +
      "event: response.content_part.added\n" +
      'data: {"type":"response.content_part.added","sequence_number":3,' +
      `"item_id":"${ITEM}","output_index":0,"content_index":0,` +
      '"part":{"type":"output_text","text":"","annotations":[]}}\n\n' +
      "event: response.output_text.delta\n" +
      'data: {"type":"response.output_text.delta","sequence_number":4,' +
      `"item_id":"${ITEM}","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}\n\n`,
  );
  const response = buildResponse(
    {
      rid: RID,
      blocks: [{ type: "text", text: "Hi" }],
      end: { reason: "end_of_turn", stopSequence: null },
      inputTokens: 5,
      outputTokens: 2,
      outputIds: [9, 10],
      logprobs: [-0.5, 0],
    },
    REQUEST,
    7,
  );
  const part = '{"type":"output_text","text":"Hi","annotations":[]}';
  const item = `{"type":"message","id":"${ITEM}","role":"assistant","status":"completed",` +
    `"content":[${part}]}`;
  assert.equal(
    text(stream.body(response)),
    "event: response.output_text.done\n" +
      'data: {"type":"response.output_text.done","sequence_number":5,' +
      `"item_id":"${ITEM}","output_index":0,"content_index":0,"text":"Hi","logprobs":[]}\n\n` +
      "event: response.content_part.done\n" +
      'data: {"type":"response.content_part.done","sequence_number":6,' +
      `"item_id":"${ITEM}","output_index":0,"content_index":0,"part":${part}}\n\n` +
      "event: response.output_item.done\n" +
      'data: {"type":"response.output_item.done","sequence_number":7,"output_index":0,' +
      `"item":${item}}\n\n` +
      "event: response.completed\n" +
      'data: {"type":"response.completed","sequence_number":8,' +
      `"response":${JSON.stringify(response)}}\n\n`,
  );
});

Deno.test("responseStreamShape() reports a failure after the stream started as response.failed with the code and message", () => {
  const stream = shape();
  const failure = stream.failure(ENGINE_DOWN);
  const failed = {
    ...HEAD,
    status: "failed",
    error: { code: "engine_unavailable", message: "engine down" },
  };
  assert.equal(
    text([failure]),
    "event: response.failed\n" +
      `data: {"type":"response.failed","sequence_number":2,"response":${
        JSON.stringify(failed)
      }}\n\n`,
  );
});
