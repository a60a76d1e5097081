import assert from "node:assert/strict";
import { bodyChunks, buildChatCompletion, roleChunk } from "../../lib/openai/mod.ts";
import type { TurnOutput } from "../../lib/session/mod.ts";

const output: TurnOutput = {
  rid: "r1",
  blocks: [
    { type: "thinking", thinking: "Think." },
    { type: "text", text: "Calling." },
    { type: "tool_call", name: "bash", input: { command: "ls" } },
  ],
  end: { reason: "end_of_turn", stopSequence: null },
  inputTokens: 10,
  outputTokens: 3,
  outputIds: [5, 6, 7],
  logprobs: [-0.1, -0.2, -0.3],
  promptIds: [1, 2],
};
const options = {
  model: "m",
  logprobs: true,
  topLogprobs: 0,
  tokenIds: true,
  decodeToken: (id: number) => `t${id}`,
  created: 1,
};

Deno.test("buildChatCompletion() answers in OpenAI's shape with token data on request", () => {
  const completion = buildChatCompletion(output, options);
  const [choice] = completion.choices;
  assert.equal(completion.id, "chatcmpl-r1");
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, "Calling.");
  assert.equal(choice.message.reasoning_content, "Think.");
  assert.deepEqual(choice.message.tool_calls!.map((call) => call.function), [
    { name: "bash", arguments: '{"command":"ls"}' },
  ]);
  assert.match(choice.message.tool_calls![0].id, /^call_[0-9a-f]{24}$/);
  assert.deepEqual(choice.token_ids, [5, 6, 7]);
  assert.deepEqual(completion.prompt_token_ids, [1, 2]);
  assert.deepEqual(choice.logprobs!.content.map((entry) => [entry.token, entry.logprob]), [
    ["t5", -0.1],
    ["t6", -0.2],
    ["t7", -0.3],
  ]);
  assert.deepEqual(completion.usage.total_tokens, 13);
  const plain = buildChatCompletion(output, { ...options, logprobs: false, tokenIds: false });
  assert.equal(plain.choices[0].logprobs, null);
  assert.equal("token_ids" in plain.choices[0], false);
  assert.equal("prompt_token_ids" in plain, false);
});

Deno.test("bodyChunks() streams reasoning, content, each call's name then arguments, the finish and the usage", () => {
  const completion = buildChatCompletion(output, options);
  const chunks = bodyChunks(completion, { includeUsage: true });
  assert.deepEqual(chunks.map((chunk) => chunk.choices[0]?.delta ?? null), [
    { reasoning_content: "Think." },
    { content: "Calling." },
    {
      tool_calls: [{
        index: 0,
        id: completion.choices[0].message.tool_calls![0].id,
        type: "function",
        function: { name: "bash", arguments: "" },
      }],
    },
    { tool_calls: [{ index: 0, function: { arguments: '{"command":"ls"}' } }] },
    {},
    null,
  ]);
  assert.deepEqual(chunks.map((chunk) => chunk.choices[0]?.finish_reason ?? null), [
    null,
    null,
    null,
    null,
    "tool_calls",
    null,
  ]);
  assert.deepEqual(chunks[0].choices[0].token_ids, [5, 6, 7]);
  assert.equal(chunks[0].choices[0].logprobs!.content.length, 3);
  assert.deepEqual(chunks.at(-1)!.usage, completion.usage);
  assert.ok(chunks.slice(0, -1).every((chunk) => chunk.usage === null));
  assert.deepEqual(roleChunk(completion, { includeUsage: false }, [1, 2]).prompt_token_ids, [1, 2]);
});
