/**
 * Real streaming through HTTP, for each protocol: content reaches the client while the engine
 * still samples, a streamed conversation records the same tokens as the same conversation
 * unstreamed (and the client reads the same replies), and a client that leaves mid-stream
 * aborts the engine request.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import assert from "node:assert/strict";
import { parseKey } from "../../lib/kv/mod.ts";
import { type SampleJson, startGateway, type TestGateway } from "../_gateway.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { sseEvents } from "../_sse.ts";
import { until } from "../engine/_client.ts";

const call = (name: string, args: Record<string, unknown>) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

/** Replies with reasoning, text split over characters of several tokens, and calls. */
const REPLIES = [
  `<think>\nFirst the files — 文件 🎉.\n</think>\n\nLooking: ünïcödé.\n${
    call("Bash", { command: "ls" })
  }`,
  `<think>\nTwo of them.\n</think>\n\n${call("Bash", { command: "wc -l a.txt" })}\n${
    call("Bash", { command: "cat b.txt" })
  }`,
  "<think>\nDone.\n</think>\n\nTwo files: a.txt 🎉 and b.txt.",
];
const BASH = {
  name: "Bash",
  input_schema: { type: "object" as const, properties: { command: { type: "string" } } },
};

/** The tokens a session recorded, whole. */
function tokensOf(samples: SampleJson[]) {
  return samples.map((s) => ({
    prompt: s.prompt_ids,
    response: s.response_ids,
    mask: s.loss_mask,
    logprobs: s.logprobs,
    turns: s.turns.map((t) => [t.input_len, t.output_len, t.finish_reason, t.flags]),
  }));
}

/** A tool loop over the Messages API: the SDK's stream helper, or plain JSON. */
async function anthropicLoop(gw: TestGateway, stream: boolean) {
  const { id, token } = await gw.openSession();
  const client = gw.anthropic(token);
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: "What is here?" }];
  const replies: Anthropic.Message[] = [];
  for (let turn = 0; turn < REPLIES.length; turn++) {
    const request = { model: "m", max_tokens: 512, tools: [BASH], messages };
    const reply = stream
      ? await client.messages.stream(request).finalMessage()
      : await client.messages.create(request);
    replies.push(reply);
    messages.push({ role: "assistant", content: reply.content });
    const uses = reply.content.filter((block) => block.type === "tool_use");
    if (uses.length === 0) break;
    messages.push({
      role: "user",
      content: uses.map((use) => ({ type: "tool_result", tool_use_id: use.id, content: "ok" })),
    });
  }
  return { id, replies };
}

/** A tool loop over the Responses API, streamed events read back into each response's output. */
async function responsesLoop(gw: TestGateway, stream: boolean) {
  const { id, token } = await gw.openSession();
  const client = gw.openai(token);
  const input: OpenAI.Responses.ResponseInputItem[] = [{ role: "user", content: "What is here?" }];
  const outputs: unknown[] = [];
  for (let turn = 0; turn < REPLIES.length; turn++) {
    const request = {
      model: "m",
      input,
      tools: [{
        type: "function" as const,
        name: "Bash",
        parameters: BASH.input_schema,
        strict: false,
      }],
    };
    const response = stream
      ? await client.responses.stream(request).finalResponse()
      : await client.responses.create(request);
    outputs.push(response.output);
    input.push(...response.output as OpenAI.Responses.ResponseInputItem[]);
    const calls = response.output.filter((
      item,
    ): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === "function_call");
    if (calls.length === 0) break;
    for (const item of calls as OpenAI.Responses.ResponseFunctionToolCall[]) {
      input.push({ type: "function_call_output", call_id: item.call_id, output: "ok" });
    }
  }
  return { id, outputs };
}

/** Replaces the ids and signatures that differ between sessions; drops the SDKs' own fields. */
function normalize(value: unknown): unknown {
  const own = new Set(["parsed", "parsed_arguments", "parsed_output"]);
  return JSON.parse(
    JSON.stringify(value, (key, field) => own.has(key) ? undefined : field)
      .replace(/(msg|toolu|rs|fc|call|resp)_[0-9a-f]+/g, "$1_X")
      .replace(/"signature":"[^"]*"/g, '"signature":"S"'),
  );
}

for (const incrementalStreaming of [false, true]) {
  const form = incrementalStreaming ? "incremental" : "cumulative";
  Deno.test(`a streamed Messages conversation records the tokens of the unstreamed one and reads the same (${form} engine stream)`, async () => {
    const gw = await startGateway({ script: [...REPLIES, ...REPLIES], incrementalStreaming });
    try {
      const plain = await anthropicLoop(gw, false);
      const callsBefore = gw.engine.calls.length;
      const streamed = await anthropicLoop(gw, true);
      assert.equal(streamed.replies.length, 3);
      assert.deepEqual(
        normalize(streamed.replies),
        normalize(plain.replies),
      );
      const plainSamples = await gw.samples(plain.id);
      const streamedSamples = await gw.samples(streamed.id);
      assert.deepEqual(tokensOf(streamedSamples), tokensOf(plainSamples));
      assertChainExact(gw.engine.calls.slice(callsBefore), streamedSamples, "streamed");
    } finally {
      await gw.close();
    }
  });
}

Deno.test("a streamed Responses conversation records the tokens of the unstreamed one and reads the same", async () => {
  const gw = await startGateway({ script: [...REPLIES, ...REPLIES] });
  try {
    const plain = await responsesLoop(gw, false);
    const callsBefore = gw.engine.calls.length;
    const streamed = await responsesLoop(gw, true);
    assert.equal(streamed.outputs.length, 3);
    assert.deepEqual(normalize(streamed.outputs), normalize(plain.outputs));
    const streamedSamples = await gw.samples(streamed.id);
    assert.deepEqual(tokensOf(streamedSamples), tokensOf(await gw.samples(plain.id)));
    assertChainExact(gw.engine.calls.slice(callsBefore), streamedSamples, "streamed");
  } finally {
    await gw.close();
  }
});

/** The three protocols' streaming requests, and how each names a content delta. */
const PROTOCOLS = [
  {
    name: "Messages",
    path: "/v1/messages",
    body: { model: "m", max_tokens: 400, messages: [{ role: "user", content: "Go" }] },
    delta: "event: content_block_delta",
  },
  {
    name: "Chat Completions",
    path: "/v1/chat/completions",
    body: { model: "m", max_tokens: 400, messages: [{ role: "user", content: "Go" }] },
    delta: '"content":"',
  },
  {
    name: "Responses",
    path: "/v1/responses",
    body: { model: "m", max_output_tokens: 400, input: "Go" },
    delta: "event: response.output_text.delta",
  },
];

/** Reads `reader` until `text` has been received; returns all that was. */
async function readUntil(reader: ReadableStreamDefaultReader<string>, text: string) {
  let received = "";
  while (!received.includes(text)) {
    const chunk = await reader.read();
    assert.ok(!chunk.done, `the stream ended before "${text}"`);
    received += chunk.value;
  }
  return received;
}

for (const protocol of PROTOCOLS) {
  Deno.test(`${protocol.name}: content reaches the client while the engine samples; leaving aborts the engine request`, async () => {
    const gw = await startGateway({ script: ["word ".repeat(300)], latencyMs: 5 });
    try {
      const { id, token } = await gw.openSession();
      const response = await fetch(`${gw.url}${protocol.path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ ...protocol.body, stream: true }),
      });
      assert.equal(response.status, 200);
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      await readUntil(reader, protocol.delta);
      const [engineCall] = gw.engine.calls;
      assert.equal(engineCall.finishedAt, undefined, "the engine is still sampling");
      await reader.cancel();
      // The engine is told by /abort_request and by the closed connection, in either order.
      await until(() => engineCall.finishedAt !== undefined && gw.engine.abortRequests.length > 0);
      assert.deepEqual(gw.engine.abortRequests, [engineCall.rid]);
      assert.ok(engineCall.output!.length < 300, "the generation stopped early");
      const recorded: string[] = [];
      for await (const entry of gw.kv.list({ prefix: [] })) {
        const kind = parseKey(entry.key).kind;
        if (["turn", "turn_chunk", "lease", "chain_lease"].includes(kind)) recorded.push(kind);
      }
      assert.deepEqual(recorded, [], "no turn recorded, no lease held");
      assert.deepEqual(await gw.samples(id), []);
    } finally {
      await gw.close();
    }
  });
}

Deno.test("a stop sequence is never streamed: the text ends where the reply's does", async () => {
  const gw = await startGateway({ script: ["Count: one two three STOP four five", "x"] });
  try {
    const { token } = await gw.openSession();
    const client = gw.anthropic(token);
    const stream = client.messages.stream({
      model: "m",
      max_tokens: 64,
      stop_sequences: ["STOP"],
      messages: [{ role: "user", content: "Count" }],
    });
    const deltas: string[] = [];
    stream.on("text", (text) => deltas.push(text));
    const message = await stream.finalMessage();
    assert.equal(message.stop_reason, "stop_sequence");
    assert.equal(message.stop_sequence, "STOP");
    assert.deepEqual(message.content, [{ type: "text", text: "Count: one two three" }]);
    assert.equal(deltas.join(""), "Count: one two three");
    assert.ok(deltas.length > 1, "streamed in pieces");
  } finally {
    await gw.close();
  }
});

// The raw events of a live Messages stream keep Anthropic's grammar (checked by sseEvents).
Deno.test("a live Messages stream keeps the event grammar: dense indexes, one block open at a time", async () => {
  const gw = await startGateway({ script: [REPLIES[1]] });
  try {
    const { token } = await gw.openSession();
    const response = await gw.fetch("/v1/messages", {
      method: "POST",
      headers: { "x-api-key": token },
      body: JSON.stringify({
        model: "m",
        max_tokens: 256,
        tools: [BASH],
        stream: true,
        messages: [{ role: "user", content: "Go" }],
      }),
    });
    let open: number | null = null;
    let next = 0;
    for (const { event, data } of sseEvents(await response.text())) {
      if (event === "content_block_start") {
        assert.equal(open, null, "the previous block was closed");
        assert.equal(data.index, next++);
        open = data.index as number;
      }
      if (event === "content_block_delta") assert.equal(data.index, open);
      if (event === "content_block_stop") {
        assert.equal(data.index, open);
        open = null;
      }
    }
    assert.equal(next, 3, "thinking and two calls");
  } finally {
    await gw.close();
  }
});
