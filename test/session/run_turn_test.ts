/**
 * How a turn recognises the history it extends: by the identities this process remembers, or,
 * with a cold cache (another process, a restart), by the prefix digests stored in KV. Both must
 * agree, or a conversation would fork.
 */
import assert from "node:assert/strict";
import { startGateway, type TestGateway } from "../_gateway.ts";

const TOOLS = [{ name: "Bash", input_schema: { type: "object" } }];
const call = (command: string) =>
  `<tool_call>\n{"name": "Bash", "arguments": {"command": "${command}"}}\n</tool_call>`;

/** Sends the conversation so far; appends the reply to it. */
async function turn(gw: TestGateway, token: string, messages: unknown[]) {
  const response = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": token },
    body: JSON.stringify({ model: "m", max_tokens: 64, tools: TOOLS, messages }),
  });
  assert.equal(response.status, 200);
  const reply = await response.json();
  messages.push({ role: "assistant", content: reply.content });
  return reply;
}

function answer(messages: unknown[], reply: { content: { id?: string }[] }, text: string) {
  const id = reply.content.find((block) => block.id)!.id!;
  messages.push({
    role: "user",
    content: [{ type: "tool_result", tool_use_id: id, content: text }],
  });
}

Deno.test("a conversation continued by another gateway on the same KV stays one chain", async () => {
  const first = await startGateway({ script: [call("ls"), call("cat a")] });
  const second = await startGateway({ script: [call("cat b"), "Done."], kv: first.kv });
  try {
    const { id, token } = await first.openSession();
    const messages: unknown[] = [{ role: "user", content: "Look around." }];
    answer(messages, await turn(first, token, messages), "a b");
    answer(messages, await turn(first, token, messages), "alpha");
    // The second gateway has never seen this chain: it reads it from KV and checks digests.
    answer(messages, await turn(second, token, messages), "beta");
    await turn(second, token, messages);
    const [firstCalls, secondCalls] = [first.engine.calls, second.engine.calls];
    const chain = [...firstCalls[1].inputIds, ...firstCalls[1].output!];
    assert.deepEqual(secondCalls[0].inputIds.slice(0, chain.length), chain);
    const samples = await first.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.turns.length]), [["c0", 4]]);
  } finally {
    await second.close();
    await first.close();
  }
});

Deno.test("a remembered history that changed in an earlier message starts a new chain", async () => {
  const gw = await startGateway({ script: [call("ls"), call("cat a"), "Other."] });
  try {
    const { id, token } = await gw.openSession();
    const messages: unknown[] = [{ role: "user", content: "Look around." }];
    answer(messages, await turn(gw, token, messages), "a b");
    answer(messages, await turn(gw, token, messages), "alpha");
    messages[0] = { role: "user", content: "Look around!" }; // same length, one character differs
    await turn(gw, token, messages);
    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.kind]), [["c0", "wipe"], ["c1", "final"]]);
  } finally {
    await gw.close();
  }
});

Deno.test("moving cache_control markers does not change the recognised history", async () => {
  const gw = await startGateway({ script: [call("ls"), "Done."] });
  try {
    const { id, token } = await gw.openSession();
    const messages: unknown[] = [{
      role: "user",
      content: [{ type: "text", text: "Look around.", cache_control: { type: "ephemeral" } }],
    }];
    const reply = await turn(gw, token, messages);
    messages[0] = { role: "user", content: "Look around." };
    messages.push({
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: reply.content[0].id,
        content: "a b",
        cache_control: { type: "ephemeral" },
      }],
    });
    await turn(gw, token, messages);
    assert.deepEqual((await gw.samples(id)).map((s) => [s.chain_id, s.turns.length]), [["c0", 2]]);
  } finally {
    await gw.close();
  }
});
