/**
 * The core promise, end to end: a 6-turn tool-using conversation through the real Anthropic
 * SDK, the real Qwen3 tokenizer and the scripted engine, recorded token for token (T1–T3).
 */
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import { lowerMessages, lowerSystem, lowerTools } from "../../lib/anthropic/mod.ts";
import type { MessageParam } from "../../lib/anthropic/mod.ts";
import { scriptedLogprob } from "../../lib/scripted_engine/mod.ts";
import { qwen3, startGateway, type TestGateway } from "../_gateway.ts";

const SYSTEM = "You are a careful coding agent.";
const TOOLS: Anthropic.Tool[] = [
  {
    name: "Bash",
    description: "Run a shell command.",
    input_schema: {
      type: "object" as const,
      properties: { command: { type: "string" } },
      required: ["command"],
    },
  },
  {
    name: "Read",
    description: "Read a file.",
    input_schema: {
      type: "object" as const,
      properties: { path: { type: "string" } },
      required: ["path"],
    },
  },
];

/** The model's six replies; the fifth is sampled with a non-canonical split of " file". */
async function replies() {
  const tok = await qwen3();
  return [
    '<think>\nI should list the files first.\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>',
    '<think>\nRead the README and look into src.\n</think>\n\nReading both.\n<tool_call>\n{"name": "Read", "arguments": {"path": "README.md"}}\n</tool_call>\n<tool_call>\n{"name": "Bash", "arguments": {"command": "ls src"}}\n</tool_call>',
    "<think>\nI have what I need.\n</think>\n\nThe project is a demo with a README; src could not be listed.",
    '<think>\nCount them.\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": {"command": "ls src | wc -l"}}\n</tool_call>',
    { tokens: [...tok.encode("There is 1"), ...tok.encode(" fi"), ...tok.encode("le in src.")] },
    "<think>\nWrap up politely.\n</think>\n\nYou're welcome.",
  ];
}

/** Runs the conversation; returns the requests' messages and the replies the client got. */
async function converse(gw: TestGateway, stream: boolean) {
  const { id, token } = await gw.openSession({ test: "conversation" });
  const client = gw.anthropic(token);
  const messages: MessageParam[] = [];
  const requests: MessageParam[][] = [];
  const replies: Anthropic.Message[] = [];
  const ask = async () => {
    requests.push(structuredClone(messages));
    const params = {
      model: "qwen3-test",
      max_tokens: 512,
      system: SYSTEM,
      tools: TOOLS,
      messages: messages as Anthropic.MessageParam[],
    };
    const reply = stream
      ? await client.messages.stream(params).finalMessage()
      : await client.messages.create(params);
    replies.push(reply);
    messages.push({ role: "assistant", content: reply.content as MessageParam["content"] });
    return reply;
  };
  const toolIds = (reply: Anthropic.Message) =>
    reply.content.flatMap((block) => block.type === "tool_use" ? [block.id] : []);

  messages.push({ role: "user", content: "What is in this project?" });
  const r0 = await ask();
  messages.push({
    role: "user",
    content: [{ type: "tool_result", tool_use_id: toolIds(r0)[0], content: "README.md\nsrc" }],
  });
  const r1 = await ask();
  const [readId, lsId] = toolIds(r1);
  messages.push({
    role: "user",
    content: [
      {
        type: "tool_result",
        tool_use_id: readId,
        content: [{ type: "text", text: "# Demo\nA demo project." }],
      },
      {
        type: "tool_result",
        tool_use_id: lsId,
        content: "ls: cannot open directory 'src': Permission denied",
        is_error: true,
      },
    ],
  });
  await ask();
  messages.push({ role: "user", content: "How many files are in src?" });
  const r3 = await ask();
  messages.push({
    role: "user",
    content: [{ type: "tool_result", tool_use_id: toolIds(r3)[0], content: "1" }],
  });
  await ask();
  messages.push({ role: "user", content: "Thanks!" });
  await ask();
  return { id, requests, replies };
}

function concat(parts: readonly (readonly number[])[]): number[] {
  return parts.flatMap((part) => [...part]);
}

for (const stream of [false, true]) {
  Deno.test(`a 6-turn tool conversation is recorded token for token (${stream ? "streaming" : "JSON"})`, async () => {
    const tok = await qwen3();
    const gw = await startGateway({ script: await replies(), env: { ROUNDTRIP_POLICY: "keep" } });
    try {
      const { id, requests, replies } = await converse(gw, stream);
      const calls = gw.engine.calls;
      assert.equal(calls.length, 6);
      const outputs = calls.map((call) => call.output!);

      // What the agent received, parsed from the sampled tokens (T6).
      assert.deepEqual(replies.map((r) => r.stop_reason), [
        "tool_use",
        "tool_use",
        "end_turn",
        "tool_use",
        "end_turn",
        "end_turn",
      ]);
      assert.deepEqual(replies[1].content.map((b) => b.type), [
        "thinking",
        "text",
        "tool_use",
        "tool_use",
      ]);
      assert.deepEqual(replies[1].content[3], {
        ...replies[1].content[3],
        name: "Bash",
        input: { command: "ls src" },
      });
      assert.deepEqual(replies[4].content, [{ type: "text", text: "There is 1 file in src." }]);

      // T2: every prompt begins with the previous prompt and the tokens sampled for it.
      for (let k = 0; k + 1 < calls.length; k++) {
        const previous = [...calls[k].inputIds, ...outputs[k]];
        assert.deepEqual(
          calls[k + 1].inputIds.slice(0, previous.length),
          previous,
          `turn ${k + 1} prefix`,
        );
      }

      // T3: each delta is the template's own rendering of the new messages in context, and the
      // whole prompt equals the template's rendering wherever the template is prefix-stable.
      const stable: number[] = [];
      for (let k = 1; k < calls.length; k++) {
        const expected = tok.encode(tok.render({
          messages: [
            { role: "system", content: lowerSystem(SYSTEM) },
            ...lowerMessages(requests[k]),
          ],
          tools: lowerTools(TOOLS as never),
        }, true));
        const start = calls[k - 1].inputIds.length + outputs[k - 1].length;
        const delta = calls[k].inputIds.slice(start);
        assert.deepEqual(expected.slice(expected.length - delta.length), delta, `turn ${k} delta`);
        if (expected.length === calls[k].inputIds.length) {
          assert.deepEqual(expected, calls[k].inputIds, `turn ${k} full prompt`);
          stable.push(k);
        }
      }
      // Turns 1 and 2 continue one query; from turn 3 on Qwen3's template drops earlier reasoning.
      assert.deepEqual(stable, [1, 2]);
      assert.deepEqual(
        calls[0].inputIds,
        tok.encode(tok.render({
          messages: [{ role: "system", content: SYSTEM }, ...lowerMessages(requests[0])],
          tools: lowerTools(TOOLS as never),
        }, true)),
      );

      // T1: the sample holds exactly the sampled tokens under mask 1, with their logprobs.
      const [sample, ...others] = await gw.samples(id);
      assert.equal(others.length, 0);
      assert.equal(sample.kind, "final");
      assert.equal(sample.loss_mask.length, sample.response_ids.length);
      assert.equal(sample.logprobs.length, sample.response_ids.length);
      assert.deepEqual([...sample.prompt_ids, ...sample.response_ids], [
        ...calls[5].inputIds,
        ...outputs[5],
      ]);
      assert.deepEqual(sample.prompt_ids, calls[0].inputIds);
      const sampled = sample.response_ids.filter((_, i) => sample.loss_mask[i] === 1);
      assert.deepEqual(sampled, concat(outputs));
      const logprobs = sample.logprobs.filter((_, i) => sample.loss_mask[i] === 1);
      assert.deepEqual(
        logprobs,
        concat(outputs.map((o) => o.map((t, i) => scriptedLogprob(t, i)))),
      );
      assert.deepEqual(sample.turns.map((t) => t.flags), [
        [],
        [],
        [],
        [],
        ["roundtrip_mismatch"],
        [],
      ]);
      assert.deepEqual(sample.turns.map((t) => t.input_len), calls.map((c) => c.inputIds.length));
    } finally {
      await gw.close();
    }
  });
}

Deno.test("streaming and JSON conversations send the engine identical token histories", async () => {
  const gw = await startGateway({ script: [...(await replies()), ...(await replies())] });
  try {
    await converse(gw, false);
    await converse(gw, true);
    const calls = gw.engine.calls;
    assert.equal(calls.length, 12);
    for (let k = 0; k < 6; k++) {
      assert.deepEqual(calls[k + 6].inputIds, calls[k].inputIds, `turn ${k}`);
    }
  } finally {
    await gw.close();
  }
});
