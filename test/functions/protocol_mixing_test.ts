/**
 * One session core under two protocols: the same conversation sent as Chat Completions and as
 * Messages renders the same tokens, and one session may switch protocols from turn to turn
 * without forking its chain.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import assert from "node:assert/strict";
import { assertChainExact } from "../_chain_exact.ts";
import { GATEWAY_ORIGIN, startGateway, type TestGateway } from "../_gateway.ts";

const SYSTEM = "You are a careful coding agent.";
const SCHEMA = {
  type: "object" as const,
  properties: { command: { type: "string" } },
  required: ["command"],
};
const call = (command: string) =>
  `<tool_call>\n${JSON.stringify({ name: "bash", arguments: { command } })}\n</tool_call>`;
const REPLIES = [
  `<think>\nLook first.\n</think>\n\n${call("ls")}`,
  `Two files.\n${call("cat a.txt")}\n${call("cat b.txt")}`,
  "<think>\nSummarise.\n</think>\n\nBoth files say hello.",
  "No, nothing else.",
];
const RESULTS = [["a.txt\nb.txt"], ["hello", "hello too"]];

/** The conversation over Chat Completions, every turn. */
async function overOpenAI(gw: TestGateway, token: string): Promise<void> {
  const client = gw.openai(token);
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: "Read the files." },
  ];
  for (let turn = 0; turn < REPLIES.length; turn++) {
    const reply = (await client.chat.completions.create({
      model: "m",
      messages,
      max_tokens: 256,
      tools: [{ type: "function", function: { name: "bash", parameters: SCHEMA } }],
    })).choices[0].message;
    messages.push(reply as OpenAI.Chat.ChatCompletionMessageParam);
    (reply.tool_calls ?? []).forEach((c, k) =>
      messages.push({ role: "tool", tool_call_id: c.id, content: RESULTS[turn][k] })
    );
    if (turn === 2) messages.push({ role: "user", content: "Anything else?" });
  }
}

/** The conversation over the Messages API, every turn. */
async function overAnthropic(gw: TestGateway, token: string): Promise<void> {
  const client = gw.anthropic(token);
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Read the files." }];
  for (let turn = 0; turn < REPLIES.length; turn++) {
    const reply = await client.messages.create({
      model: "m",
      system: SYSTEM,
      messages,
      max_tokens: 256,
      tools: [{ name: "bash", input_schema: SCHEMA }],
    });
    messages.push({ role: "assistant", content: reply.content });
    const results: Anthropic.ContentBlockParam[] = reply.content.flatMap((block) =>
      block.type === "tool_use" ? [block] : []
    ).map((block, k) => ({
      type: "tool_result" as const,
      tool_use_id: (block as Anthropic.ToolUseBlock).id,
      content: RESULTS[turn][k],
    }));
    if (turn === 2) results.push({ type: "text", text: "Anything else?" });
    if (results.length > 0) messages.push({ role: "user", content: results });
  }
}

Deno.test("the same conversation over Chat Completions and over Messages renders the same tokens", async () => {
  const recorded = [];
  for (const converse of [overOpenAI, overAnthropic]) {
    const gw = await startGateway({ script: [...REPLIES] });
    try {
      const { id, token } = await gw.openSession();
      await converse(gw, token);
      const samples = await gw.samples(id);
      assertChainExact(gw.engine.calls, samples, converse.name);
      recorded.push({
        prompts: gw.engine.calls.map((c) => c.inputIds),
        sample: [samples[0].prompt_ids, samples[0].response_ids, samples[0].loss_mask],
      });
    } finally {
      await gw.close();
    }
  }
  assert.deepEqual(recorded[1].prompts, recorded[0].prompts, "every engine prompt is the same");
  assert.deepEqual(recorded[1].sample, recorded[0].sample, "the same sample");
});

Deno.test("one session switches protocols turn by turn and keeps one exact chain", async () => {
  const gw = await startGateway({ script: [...REPLIES] });
  try {
    const { id, token } = await gw.openSession();
    const openai = gw.openai(token);
    // The Messages client at the per-session base URL: its token is in the path.
    const anthropic = gw.anthropic("unused", { baseURL: `${GATEWAY_ORIGIN}/sessions/${token}` });
    const tools = [{ type: "function" as const, function: { name: "bash", parameters: SCHEMA } }];
    // Turn 1 over Chat Completions.
    const first = (await openai.chat.completions.create({
      model: "m",
      max_tokens: 256,
      tools,
      messages: [{ role: "system", content: SYSTEM }, { role: "user", content: "Read the files." }],
    })).choices[0].message;
    const [ls] = first.tool_calls as OpenAI.Chat.ChatCompletionMessageFunctionToolCall[];
    // Turn 2 over Messages: the same history, in its shape, reasoning dropped.
    const second = await anthropic.messages.create({
      model: "m",
      max_tokens: 256,
      system: SYSTEM,
      tools: [{ name: "bash", input_schema: SCHEMA }],
      messages: [
        { role: "user", content: "Read the files." },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: ls.id, name: "bash", input: { command: "ls" } }],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: ls.id, content: "a.txt\nb.txt" }],
        },
      ],
    });
    const calls = second.content.filter((block) => block.type === "tool_use");
    assert.equal(calls.length, 2);
    // Turn 3 over Chat Completions again, with the Messages reply in its shape.
    const third = (await openai.chat.completions.create({
      model: "m",
      max_tokens: 256,
      tools,
      messages: [
        { role: "system", content: SYSTEM },
        { role: "user", content: "Read the files." },
        { role: "assistant", content: null, tool_calls: [ls] },
        { role: "tool", tool_call_id: ls.id, content: "a.txt\nb.txt" },
        {
          role: "assistant",
          content: "Two files.",
          tool_calls: calls.map((block) => ({
            id: block.id,
            type: "function" as const,
            function: { name: block.name, arguments: JSON.stringify(block.input) },
          })),
        },
        { role: "tool", tool_call_id: calls[0].id, content: "hello" },
        { role: "tool", tool_call_id: calls[1].id, content: "hello too" },
      ],
    })).choices[0].message;
    assert.equal(third.content, "Both files say hello.");
    assertChainExact(gw.engine.calls, await gw.samples(id), "mixed");
    assert.equal((await gw.session(id)).chains.length, 1, "no fork");
  } finally {
    await gw.close();
  }
});
