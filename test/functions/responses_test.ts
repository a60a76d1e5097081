/**
 * The Responses API end to end through the real `openai` SDK, the real Qwen3 tokenizer and the
 * scripted engine: a multi-turn tool loop recorded token for token (JSON and streaming alike),
 * echoes that drop reasoning items and rewrite call ids, the stream's event sequence, the same
 * conversation over Chat Completions rendering the same tokens, and the token limit.
 */
import OpenAI from "openai";
import assert from "node:assert/strict";
import { assertChainExact } from "../_chain_exact.ts";
import { GATEWAY_ORIGIN, startGateway, type TestGateway } from "../_gateway.ts";

type Item = OpenAI.Responses.ResponseInputItem;

const TOOLS: OpenAI.Responses.FunctionTool[] = [
  {
    type: "function",
    name: "bash",
    description: "Run a shell command.",
    parameters: {
      type: "object",
      properties: { command: { type: "string" } },
      required: ["command"],
    },
    strict: false,
  },
  {
    type: "function",
    name: "read_file",
    description: "Read a file.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    strict: false,
  },
];

const call = (name: string, args: Record<string, unknown>) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

/** The model's replies: reasoning and a call, text and two parallel calls, an answer, another. */
const REPLIES = [
  `<think>\nList the files.\n</think>\n\n${call("bash", { command: "ls" })}`,
  `<think>\nRead both.\n</think>\n\nReading.\n${call("read_file", { path: "a.txt" })}\n${
    call("bash", { command: "wc -l b.txt" })
  }`,
  "<think>\nDone.\n</think>\n\nThe repository holds a.txt and b.txt.",
  "Yes: two files.",
];

const INSTRUCTIONS = "You are a careful coding agent.";

/** What an agent does with a response's output before echoing it: kept whole, or rewritten. */
type Echo = (output: OpenAI.Responses.ResponseOutputItem[], turn: number) => Item[];

const keep: Echo = (output) => output as Item[];

/** Reasoning items dropped, call ids rewritten (consistently), item ids dropped. */
const rewrite: Echo = (output, turn) =>
  output.flatMap((item, k): Item[] => {
    if (item.type === "reasoning") return [];
    if (item.type === "function_call") {
      return [{
        type: "function_call",
        call_id: `mine_${turn}_${k}`,
        name: item.name,
        arguments: item.arguments,
      }];
    }
    if (item.type === "message") {
      const text = item.content.map((part) => part.type === "output_text" ? part.text : "")
        .join("");
      return [{ role: "assistant", content: text }];
    }
    return [item as Item];
  });

/** Runs the conversation; returns the session id and the responses. */
async function converse(
  gw: TestGateway,
  options: { stream: boolean; echo: Echo; baseURL?: (token: string) => string },
) {
  const { id, token } = await gw.openSession({ test: "responses" });
  const client = gw.openai(token, { baseURL: options.baseURL?.(token) });
  const input: Item[] = [{ role: "user", content: "What is in this repository?" }];
  const responses: OpenAI.Responses.Response[] = [];
  const ask = async () => {
    const params = {
      model: "qwen3-test",
      instructions: INSTRUCTIONS,
      input,
      tools: TOOLS,
      store: false,
      max_output_tokens: 512,
    };
    const response = options.stream
      ? await client.responses.stream(params).finalResponse()
      : await client.responses.create(params);
    responses.push(response);
    const echoed = options.echo(response.output, responses.length);
    input.push(...echoed);
    return echoed.filter((item): item is OpenAI.Responses.ResponseFunctionToolCall =>
      item.type === "function_call"
    );
  };
  const results = (calls: OpenAI.Responses.ResponseFunctionToolCall[], outputs: string[]) =>
    calls.forEach((c, k) =>
      input.push({ type: "function_call_output", call_id: c.call_id, output: outputs[k] })
    );
  results(await ask(), ["a.txt\nb.txt"]);
  results(await ask(), ["alpha", "3 b.txt"]);
  await ask();
  input.push({ role: "user", content: "Only two?" });
  await ask();
  return { id, responses };
}

Deno.test("a tool loop through the openai SDK's Responses API is one exact chain, JSON and streaming alike", async () => {
  const recorded: { prompt: number[]; response: number[]; mask: number[] }[] = [];
  for (const stream of [false, true]) {
    const gw = await startGateway({ script: [...REPLIES] });
    try {
      const { id, responses } = await converse(gw, { stream, echo: keep });
      assert.deepEqual(
        responses.map((r) => r.output.map((item) => item.type)),
        [
          ["reasoning", "function_call"],
          ["reasoning", "message", "function_call", "function_call"],
          ["reasoning", "message"],
          ["message"],
        ],
      );
      const reasoning = responses[0].output[0] as OpenAI.Responses.ResponseReasoningItem;
      assert.deepEqual(reasoning.content, [{ type: "reasoning_text", text: "List the files." }]);
      assert.deepEqual(
        responses[1].output.flatMap((item) =>
          item.type === "function_call" ? [[item.name, JSON.parse(item.arguments)]] : []
        ),
        [["read_file", { path: "a.txt" }], ["bash", { command: "wc -l b.txt" }]],
      );
      assert.equal(responses[1].output_text, "Reading.");
      assert.equal(responses[3].output_text, "Yes: two files.");
      assert.deepEqual(responses.map((r) => r.status), Array(4).fill("completed"));
      responses.forEach((r, k) => {
        assert.equal(r.usage!.input_tokens, gw.engine.calls[k].inputIds.length);
        assert.equal(r.usage!.output_tokens, gw.engine.calls[k].output!.length);
      });
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

Deno.test("echoes without reasoning items and with rewritten call ids continue the chain", async () => {
  const gw = await startGateway({ script: [...REPLIES] });
  try {
    const { id } = await converse(gw, { stream: false, echo: rewrite });
    assertChainExact(gw.engine.calls, await gw.samples(id), "rewritten echoes");
    assert.equal((await gw.session(id)).chains.length, 1, "no fork");
  } finally {
    await gw.close();
  }
});

Deno.test("the per-session base URL serves the Responses API with the token in the path", async () => {
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

Deno.test("a stream is the Responses event sequence, numbered from 0, ending with response.completed", async () => {
  const gw = await startGateway({
    script: [`<think>\nLook.\n</think>\n\nHere.\n${call("bash", { command: "ls" })}`],
  });
  try {
    const { token } = await gw.openSession();
    const response = await gw.fetch("/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", input: "Look", tools: TOOLS, stream: true }),
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type")!, /^text\/event-stream/);
    const text = await response.text();
    const events = text.split("\n\n").filter((block) => block.startsWith("event: ")).map(
      (block) => {
        const [eventLine, dataLine] = block.split("\n");
        const data = JSON.parse(dataLine.slice("data: ".length));
        assert.equal(eventLine, `event: ${data.type}`);
        return data;
      },
    );
    // Deltas arrive as the tokens are sampled: a run of them is one entry here.
    const types = events.map((event) => event.type)
      .filter((type, i, all) => !type.endsWith(".delta") || all[i - 1] !== type);
    assert.deepEqual(types, [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.reasoning_text.delta",
      "response.reasoning_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    assert.deepEqual(events.map((event) => event.sequence_number), events.map((_, i) => i));
    assert.equal(events[0].response.status, "in_progress");
    assert.deepEqual(events[0].response.output, []);
    const done = events.at(-1).response;
    assert.equal(done.id, events[0].response.id);
    assert.deepEqual(
      events.filter((e) => e.type === "response.output_item.done").map((e) => e.item),
      done.output,
    );
    const deltas = (type: string) =>
      events.filter((e) => e.type === type).map((e) => e.delta).join("");
    assert.equal(deltas("response.reasoning_text.delta"), "Look.");
    assert.equal(deltas("response.output_text.delta"), "Here.");
    assert.equal(deltas("response.function_call_arguments.delta"), '{"command":"ls"}');
    assert.equal(events[2].item.status, "in_progress");
  } finally {
    await gw.close();
  }
});

Deno.test("the same conversation over the Responses API and Chat Completions renders the same tokens", async () => {
  const gw = await startGateway({
    script: [call("bash", { command: "ls" }), "Two.", call("bash", { command: "ls" }), "Two."],
  });
  try {
    const responsesSession = await gw.openSession();
    const chatSession = await gw.openSession();
    const responses = gw.openai(responsesSession.token);
    const chat = gw.openai(chatSession.token);
    const first = await responses.responses.create({
      model: "m",
      instructions: INSTRUCTIONS,
      input: "What is here?",
      tools: TOOLS,
    });
    const fc = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    await responses.responses.create({
      model: "m",
      instructions: INSTRUCTIONS,
      input: [{ role: "user", content: "What is here?" }, fc, {
        type: "function_call_output",
        call_id: fc.call_id,
        output: "a.txt",
      }],
      tools: TOOLS,
    });
    const chatTools = TOOLS.map(({ name, description, parameters }) => ({
      type: "function" as const,
      function: {
        name,
        description: description ?? undefined,
        parameters: parameters ?? undefined,
      },
    }));
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: "system", content: INSTRUCTIONS },
      { role: "user", content: "What is here?" },
    ];
    const reply =
      (await chat.chat.completions.create({ model: "m", messages, tools: chatTools })).choices[0]
        .message;
    messages.push(reply as OpenAI.Chat.ChatCompletionMessageParam, {
      role: "tool",
      tool_call_id: reply.tool_calls![0].id,
      content: "a.txt",
    });
    await chat.chat.completions.create({ model: "m", messages, tools: chatTools });
    const [a, b] = [await gw.samples(responsesSession.id), await gw.samples(chatSession.id)];
    assert.deepEqual(a[0].prompt_ids, b[0].prompt_ids);
    assert.deepEqual(a[0].response_ids, b[0].response_ids);
    assert.deepEqual(a[0].loss_mask, b[0].loss_mask);
    assert.deepEqual(gw.engine.calls[1].inputIds, gw.engine.calls[3].inputIds);
  } finally {
    await gw.close();
  }
});

Deno.test("max_output_tokens ends a response as incomplete, with the reason", async () => {
  const gw = await startGateway({ script: ["A rather long answer that goes on."] });
  try {
    const { token } = await gw.openSession();
    const client = gw.openai(token);
    const response = await client.responses.create({
      model: "m",
      input: "Talk",
      max_output_tokens: 3,
    });
    assert.equal(response.status, "incomplete");
    assert.deepEqual(response.incomplete_details, { reason: "max_output_tokens" });
    assert.equal(response.usage!.output_tokens, 3);
    assert.equal(gw.engine.calls[0].sampling.max_new_tokens, 3);
  } finally {
    await gw.close();
  }
});
