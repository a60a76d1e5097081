/**
 * Chat Completions end to end through the real `openai` SDK, the real Qwen3 tokenizer and the
 * scripted engine: a multi-turn tool loop recorded token for token (JSON and streaming alike),
 * echoes that drop reasoning and rewrite tool-call ids, token data on request, and a retried
 * overload.
 */
import OpenAI from "openai";
import assert from "node:assert/strict";
import { assertChainExact } from "../_chain_exact.ts";
import { scriptedLogprob, scriptedTopLogprobs } from "../../lib/scripted_engine/mod.ts";
import { GATEWAY_ORIGIN, startGateway, type TestGateway } from "../_gateway.ts";

type Message = OpenAI.Chat.ChatCompletionMessageParam;

const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "bash",
      description: "Run a shell command.",
      parameters: {
        type: "object",
        properties: { command: { type: "string" } },
        required: ["command"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a file.",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  },
];

const call = (name: string, args: Record<string, unknown>) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

/** The model's replies: reasoning, a call, two parallel calls, an answer, another question. */
const REPLIES = [
  `<think>\nList the files.\n</think>\n\n${call("bash", { command: "ls" })}`,
  `<think>\nRead both.\n</think>\n\nReading.\n${call("read_file", { path: "a.txt" })}\n${
    call("bash", { command: "wc -l b.txt" })
  }`,
  "<think>\nDone.\n</think>\n\nThe repository holds a.txt and b.txt.",
  "Yes: two files.",
];

/** What an agent does with a reply before echoing it: kept whole, or as clients do. */
type Echo = (reply: OpenAI.Chat.ChatCompletionMessage, turn: number) => Message;

const keep: Echo = (reply) => reply as Message;

/** Reasoning dropped, tool-call ids rewritten (consistently), content trimmed. */
const rewrite: Echo = (reply, turn) => ({
  role: "assistant",
  content: reply.content?.trim() ?? null,
  ...(reply.tool_calls
    ? {
      tool_calls: reply.tool_calls.map((c, k) => ({
        ...(c as OpenAI.Chat.ChatCompletionMessageFunctionToolCall),
        id: `mine_${turn}_${k}`,
      })),
    }
    : {}),
});

/** Runs the conversation; returns the session id and the replies. */
async function converse(
  gw: TestGateway,
  options: { stream: boolean; echo: Echo; baseURL?: (token: string) => string },
) {
  const { id, token } = await gw.openSession({ test: "chat" });
  const client = gw.openai(token, { baseURL: options.baseURL?.(token) });
  const messages: Message[] = [
    { role: "system", content: "You are a careful coding agent." },
    { role: "user", content: "What is in this repository?" },
  ];
  const replies: OpenAI.Chat.ChatCompletionMessage[] = [];
  const ask = async () => {
    const params = { model: "qwen3-test", messages, tools: TOOLS, max_tokens: 512 };
    let reply: OpenAI.Chat.ChatCompletionMessage;
    if (options.stream) {
      const stream = client.chat.completions.stream({ ...params, stream: true });
      // reasoning_content streams as deltas (DeepSeek's convention); the SDK's helper keeps only
      // the last of a field it does not know, so the client adds them up, as agents do.
      let reasoning = "";
      stream.on("chunk", (chunk) => {
        const delta = chunk.choices[0]?.delta as { reasoning_content?: string } | undefined;
        reasoning += delta?.reasoning_content ?? "";
      });
      reply = (await stream.finalChatCompletion()).choices[0].message;
      if (reasoning) Object.assign(reply, { reasoning_content: reasoning });
    } else {
      reply = (await client.chat.completions.create(params)).choices[0].message;
    }
    replies.push(reply);
    messages.push(options.echo(reply, replies.length));
    return messages.at(-1) as OpenAI.Chat.ChatCompletionAssistantMessageParam;
  };
  const results = (echoed: OpenAI.Chat.ChatCompletionAssistantMessageParam, outputs: string[]) =>
    echoed.tool_calls!.forEach((c, k) =>
      messages.push({ role: "tool", tool_call_id: c.id, content: outputs[k] })
    );
  results(await ask(), ["a.txt\nb.txt"]);
  results(await ask(), ["alpha", "3 b.txt"]);
  await ask();
  messages.push({ role: "user", content: "Only two?" });
  await ask();
  return { id, replies };
}

Deno.test("a tool loop through the openai SDK is recorded as one exact chain, JSON and streaming alike", async () => {
  const recorded: { prompt: number[]; response: number[]; mask: number[] }[] = [];
  for (const stream of [false, true]) {
    const gw = await startGateway({ script: [...REPLIES] });
    try {
      const { id, replies } = await converse(gw, { stream, echo: keep });
      assert.equal(
        (replies[0] as { reasoning_content?: string }).reasoning_content,
        "List the files.",
      );
      assert.equal(replies[0].content, null);
      assert.deepEqual(replies[0].tool_calls!.map((c) => c.type), ["function"]);
      assert.deepEqual(
        replies[1].tool_calls!.map((c) => {
          const fn = (c as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function;
          return [fn.name, JSON.parse(fn.arguments)];
        }),
        [["read_file", { path: "a.txt" }], ["bash", { command: "wc -l b.txt" }]],
      );
      assert.equal(replies[1].content, "Reading.");
      assert.equal(replies[3].content, "Yes: two files.");
      const samples = await gw.samples(id);
      assertChainExact(gw.engine.calls, samples, stream ? "stream" : "json");
      recorded.push({
        prompt: samples[0].prompt_ids,
        response: samples[0].response_ids,
        mask: samples[0].loss_mask,
      });
    } finally {
      await gw.close();
    }
  }
  assert.deepEqual(recorded[1], recorded[0], "streaming records the same tokens as JSON");
});

Deno.test("echoes without reasoning_content and with rewritten tool-call ids continue the chain", async () => {
  const gw = await startGateway({ script: [...REPLIES] });
  try {
    const { id } = await converse(gw, { stream: false, echo: rewrite });
    assertChainExact(gw.engine.calls, await gw.samples(id), "rewritten echoes");
    const view = await gw.session(id);
    assert.equal(view.chains.length, 1, "no fork");
  } finally {
    await gw.close();
  }
});

Deno.test("the per-session base URL serves Chat Completions with the token in the path", async () => {
  const gw = await startGateway({ script: [...REPLIES] });
  try {
    const { id } = await converse(gw, {
      stream: true,
      echo: keep,
      baseURL: (token) => `${GATEWAY_ORIGIN}/sessions/${token}/v1`,
    });
    assertChainExact(gw.engine.calls, await gw.samples(id), "per-session URL");
  } finally {
    await gw.close();
  }
});

Deno.test("usage.prompt_tokens is what the engine read; stream_options.include_usage ends with usage", async () => {
  const gw = await startGateway({ script: ["Hello there.", "Hello again."] });
  try {
    const { token } = await gw.openSession();
    const client = gw.openai(token);
    const messages: Message[] = [{ role: "user", content: "Hi" }];
    const json = await client.chat.completions.create({ model: "m", messages });
    assert.equal(json.usage!.prompt_tokens, gw.engine.calls[0].inputIds.length);
    assert.equal(json.usage!.completion_tokens, gw.engine.calls[0].output!.length);
    assert.equal(json.choices[0].finish_reason, "stop");
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    const stream = await client.chat.completions.create({
      model: "m",
      messages: [...messages, json.choices[0].message as Message, {
        role: "user",
        content: "Again",
      }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) chunks.push(chunk);
    assert.deepEqual(chunks[0].choices[0].delta, { role: "assistant" });
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage!.prompt_tokens, gw.engine.calls[1].inputIds.length);
    assert.ok(chunks.slice(0, -1).every((chunk) => chunk.usage === null));
    assert.equal(chunks.at(-2)!.choices[0].finish_reason, "stop");
    assert.equal(
      chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join(""),
      "Hello again.",
    );
  } finally {
    await gw.close();
  }
});

Deno.test("logprobs, top_logprobs and return_token_ids give the engine's tokens, also on a replay", async () => {
  const gw = await startGateway({ script: ["Hi there.", "Second."] });
  try {
    const { token } = await gw.openSession();
    const body = {
      model: "m",
      messages: [{ role: "user", content: "Hello" }],
      logprobs: true,
      top_logprobs: 2,
      return_token_ids: true,
      seed: 7,
    };
    const ask = async () => {
      const response = await gw.fetch("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.equal(response.status, 200);
      return await response.json();
    };
    const first = await ask();
    const [engineCall] = gw.engine.calls;
    assert.equal(engineCall.sampling.sampling_seed, 7);
    assert.deepEqual(first.prompt_token_ids, engineCall.inputIds);
    assert.deepEqual(first.choices[0].token_ids, engineCall.output);
    const content = first.choices[0].logprobs.content;
    assert.deepEqual(
      content.map((entry: { logprob: number }) => entry.logprob),
      engineCall.output!.map((t, i) => scriptedLogprob(t, i)),
    );
    assert.deepEqual(
      content.map((entry: { token: string }) => entry.token),
      engineCall.output!.map((t) => gw.tokenizer.decode([t])),
    );
    assert.deepEqual(
      content[0].top_logprobs.map((top: { logprob: number }) => top.logprob),
      scriptedTopLogprobs(engineCall.output![0], 0, 2).map(([logprob]) => logprob),
    );
    const replay = await ask();
    assert.equal(gw.engine.calls.length, 1, "a retried request is answered from its record");
    assert.deepEqual(replay.prompt_token_ids, first.prompt_token_ids);
    assert.deepEqual(replay.choices[0].token_ids, first.choices[0].token_ids);
    assert.deepEqual(
      replay.choices[0].logprobs.content.map((entry: { logprob: number }) => entry.logprob),
      content.map((entry: { logprob: number }) => entry.logprob),
    );
    assert.equal(replay.choices[0].message.content, first.choices[0].message.content);
    assert.equal(replay.id, first.id);
  } finally {
    await gw.close();
  }
});

Deno.test("the openai SDK retries an overloaded engine (529) and then succeeds", async () => {
  const gw = await startGateway({ script: ["Recovered."], env: { RETRY_AFTER_MS: "20" } });
  try {
    const { id, token } = await gw.openSession();
    gw.engine.fault({ kind: "unavailable" });
    const client = gw.openai(token, { maxRetries: 2 });
    const reply = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Hi" }],
    });
    assert.equal(reply.choices[0].message.content, "Recovered.");
    const statuses = gw.exchanges
      .filter((exchange) => exchange.path === "/v1/chat/completions")
      .map((exchange) => exchange.status);
    assert.deepEqual(statuses, [529, 200]);
    assertChainExact(gw.engine.calls.slice(1), await gw.samples(id), "after the retry");
  } finally {
    await gw.close();
  }
});
