/**
 * Chat Completions' stream shape as bytes: the role chunk at once (or, waiting for the prompt
 * ids, at the end), `: keep-alive` comments, content chunks as sampled, the finish and
 * `data: [DONE]`, and a failure as `data: {"error": …}`.
 */
import assert from "node:assert/strict";
import { ENGINE_DOWN, text } from "../_stream_shapes.ts";
import {
  buildChatCompletion,
  chunkStreamShape,
  type ChunkStreamTurn,
} from "../../lib/openai/mod.ts";

const RID = "0123456789abcdef";
const HEAD = { id: `chatcmpl-${RID}`, model: "m", created: 7 };
const CHUNK = '{"id":"chatcmpl-0123456789abcdef","object":"chat.completion.chunk","created":7,' +
  '"model":"m",';
const completion = buildChatCompletion({
  rid: RID,
  blocks: [{ type: "text", text: "Hi" }],
  end: { reason: "end_of_turn", stopSequence: null },
  inputTokens: 5,
  outputTokens: 2,
  outputIds: [9, 10],
  logprobs: [-0.5, 0],
  promptIds: [1, 2],
}, {
  model: "m",
  logprobs: false,
  topLogprobs: 0,
  tokenIds: true,
  decodeToken: String,
  created: 7,
});

/** A stream of `completion`'s turn: prompt ids not asked for and no usage, unless `asked` says. */
const shape = (asked: Partial<ChunkStreamTurn> = {}) =>
  chunkStreamShape({
    requestId: "req_1",
    head: HEAD,
    rid: RID,
    options: { includeUsage: false },
    promptIdsFirst: false,
    promptIds: null,
    ...asked,
  });

Deno.test("chunkStreamShape() sends the role chunk at once, keep-alive comments, and x-request-id", () => {
  const stream = shape();
  assert.equal(
    text(stream.head),
    `data: ${CHUNK}"choices":[{"index":0,"delta":{"role":"assistant"},"logprobs":null,` +
      '"finish_reason":null}]}\n\n',
  );
  assert.equal(text([stream.keepAlive]), ": keep-alive\n\n");
  assert.deepEqual(stream.headers, { "x-request-id": "req_1" });
});

Deno.test("chunkStreamShape() streams content as sampled, then the finish with the token ids and [DONE]", () => {
  const stream = shape();
  assert.equal(
    text(stream.content([{ type: "text", index: 0, text: "Hi" }])),
    `data: ${CHUNK}"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,` +
      '"finish_reason":null}]}\n\n',
  );
  assert.equal(
    text(stream.body(completion)),
    `data: ${CHUNK}"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop",` +
      '"token_ids":[9,10]}]}\n\n' +
      "data: [DONE]\n\n",
  );
});

Deno.test("chunkStreamShape() puts known prompt ids in the role chunk, and holds the role chunk for the end when they are not known", () => {
  const known = shape({ promptIdsFirst: true, promptIds: [1, 2] });
  assert.equal(
    text(known.head),
    `data: ${CHUNK}"choices":[{"index":0,"delta":{"role":"assistant"},"logprobs":null,` +
      '"finish_reason":null}],"prompt_token_ids":[1,2]}\n\n',
  );
  const waits = shape({ options: { includeUsage: true }, promptIdsFirst: true });
  assert.deepEqual(waits.head, []);
  const usage = '{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,' +
    '"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}';
  assert.equal(
    text(waits.body(completion)),
    `data: ${CHUNK}"usage":null,"choices":[{"index":0,"delta":{"role":"assistant"},` +
      '"logprobs":null,"finish_reason":null}],"prompt_token_ids":[1,2]}\n\n' +
      `data: ${CHUNK}"usage":null,"choices":[{"index":0,"delta":{"content":"Hi"},` +
      '"logprobs":null,"finish_reason":null,"token_ids":[9,10]}]}\n\n' +
      `data: ${CHUNK}"usage":null,"choices":[{"index":0,"delta":{},"logprobs":null,` +
      '"finish_reason":"stop"}]}\n\n' +
      `data: ${CHUNK}"usage":${usage},"choices":[]}\n\n` +
      "data: [DONE]\n\n",
  );
});

Deno.test("chunkStreamShape() reports a failure after the stream started in OpenAI's envelope, the code as code", () => {
  const stream = shape();
  const failure = stream.failure(ENGINE_DOWN);
  assert.equal(
    text([failure]),
    'data: {"error":{"message":"engine down","type":"server_error","param":null,' +
      '"code":"engine_unavailable"}}\n\n',
  );
});
