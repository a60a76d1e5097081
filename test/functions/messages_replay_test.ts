/**
 * Retries, duplicates, regenerations and racing requests on one session: no turn is lost,
 * duplicated or forked.
 */
import assert from "node:assert/strict";
import { startGateway, type TestGateway } from "../_gateway.ts";

const TOOLS = [{ name: "Bash", input_schema: { type: "object" } }];
const call = (command: string) =>
  `<think>\nRun ${command}.\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": {"command": "${command}"}}\n</tool_call>`;

async function post(gw: TestGateway, token: string, body: Record<string, unknown>) {
  const response = await gw.fetch("/v1/messages", {
    method: "POST",
    headers: { "x-api-key": token, "x-stainless-retry-count": "0" },
    body: JSON.stringify({ model: "m", max_tokens: 256, tools: TOOLS, ...body }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return body.stream ? await response.text() : await response.json();
}

/** A three-turn conversation: returns its requests' message lists and the replies. */
async function converse(gw: TestGateway, token: string) {
  const requests: unknown[][] = [];
  const replies: { content: { type: string; id?: string }[] }[] = [];
  const messages: unknown[] = [{ role: "user", content: "Look around." }];
  for (let turn = 0; turn < 3; turn++) {
    requests.push(structuredClone(messages));
    const reply = await post(gw, token, { messages });
    replies.push(reply);
    messages.push({ role: "assistant", content: reply.content });
    const id = reply.content.find((b: { id?: string }) => b.id)?.id;
    messages.push({
      role: "user",
      content: id ? [{ type: "tool_result", tool_use_id: id, content: `out ${turn}` }] : "go on",
    });
  }
  return { requests, replies };
}

Deno.test("a retried request is answered with the recorded reply: no new turn, same content", async () => {
  const gw = await startGateway({ script: [call("ls"), call("cat a"), call("cat b")] });
  try {
    const { id, token } = await gw.openSession();
    const { requests, replies } = await converse(gw, token);
    const before = await gw.samples(id);
    // A late retry of the second request, then of the last one, streaming this time.
    assert.deepEqual(await post(gw, token, { messages: requests[1] }), replies[1]);
    const streamed = await post(gw, token, { messages: requests[2], stream: true });
    assert.match(streamed, new RegExp(`"id":"${(replies[2] as { id?: string }).id}"`));
    assert.equal(gw.engine.calls.length, 3);
    assert.deepEqual(await gw.samples(id), before);
  } finally {
    await gw.close();
  }
});

Deno.test("a duplicate that arrives while the original generates waits and gets the same answer", async () => {
  const gw = await startGateway({ script: [call("ls")], latencyMs: 10 });
  try {
    const { id, token } = await gw.openSession();
    const messages = [{ role: "user", content: "Look around." }];
    const [first, second] = await Promise.all([
      post(gw, token, { messages }),
      post(gw, token, { messages }),
    ]);
    assert.deepEqual(second, first);
    assert.equal(gw.engine.calls.length, 1);
    assert.deepEqual((await gw.samples(id)).map((s) => s.turns.length), [1]);
  } finally {
    await gw.close();
  }
});

Deno.test("a regenerated last turn truncates the chain; samples hold only the surviving turns", async () => {
  const gw = await startGateway({
    script: [call("ls"), call("cat a"), call("cat b"), call("cat c")],
  });
  try {
    const { id, token } = await gw.openSession();
    const { requests } = await converse(gw, token);
    // The same conversation as the last request, sampled again (another temperature).
    const regenerated = await post(gw, token, { messages: requests[2], temperature: 0.7 });
    assert.match(JSON.stringify(regenerated.content), /cat c/);
    const calls = gw.engine.calls;
    assert.equal(calls.length, 4);
    assert.deepEqual(calls[3].inputIds, calls[2].inputIds, "the same prompt, sampled again");
    const [sample, ...others] = await gw.samples(id);
    assert.equal(others.length, 0);
    assert.equal(sample.turns.length, 3);
    const sampled = sample.response_ids.filter((_, i) => sample.loss_mask[i] === 1);
    assert.deepEqual(sampled, [...calls[0].output!, ...calls[1].output!, ...calls[3].output!]);
    assert.deepEqual([...sample.prompt_ids, ...sample.response_ids], [
      ...calls[3].inputIds,
      ...calls[3].output!,
    ]);
  } finally {
    await gw.close();
  }
});

Deno.test("a request that branches from an earlier reply rewinds to it and keeps the turns before", async () => {
  const gw = await startGateway({
    script: [call("ls"), call("cat a"), call("cat b"), "Branched."],
  });
  try {
    const { id, token } = await gw.openSession();
    const { requests, replies } = await converse(gw, token);
    // After the first reply, the user says something else instead of the tool result.
    const branch = [...requests[1].slice(0, 2), {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: replies[0].content[1].id, content: "other" }],
    }];
    await post(gw, token, { messages: branch });
    const calls = gw.engine.calls;
    const kept = [...calls[0].inputIds, ...calls[0].output!];
    assert.deepEqual(calls[3].inputIds.slice(0, kept.length), kept);
    const [sample, ...others] = await gw.samples(id);
    assert.equal(others.length, 0);
    assert.equal(sample.turns.length, 2);
    assert.deepEqual(
      sample.response_ids.filter((_, i) => sample.loss_mask[i] === 1),
      [...calls[0].output!, ...calls[3].output!],
    );
  } finally {
    await gw.close();
  }
});

Deno.test("regenerating the first turn rewinds the chain to empty, not to a new chain", async () => {
  const gw = await startGateway({ script: [call("ls"), call("cat a"), "Again."] });
  try {
    const { id, token } = await gw.openSession();
    const messages = [{ role: "user", content: "Look around." }];
    const first = await post(gw, token, { messages });
    await post(gw, token, {
      messages: [...messages, { role: "assistant", content: first.content }, {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: first.content[1].id, content: "a" }],
      }],
    });
    await post(gw, token, { messages, temperature: 0.1 });
    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.kind, s.turns.length]), [[
      "c0",
      "final",
      1,
    ]]);
    assert.deepEqual(samples[0].response_ids, gw.engine.calls[2].output);
  } finally {
    await gw.close();
  }
});

Deno.test("two different requests racing on one session are serialized, never interleaved", async () => {
  const gw = await startGateway({ script: [call("ls"), call("pwd")], latencyMs: 10 });
  try {
    const { id, token } = await gw.openSession();
    const [a, b] = [[{ role: "user", content: "Look around." }], [{
      role: "user",
      content: "Where am I?",
    }]];
    await Promise.all([post(gw, token, { messages: a }), post(gw, token, { messages: b })]);
    const [first, second] = gw.engine.calls;
    assert.ok(
      second.receivedAt >= first.finishedAt!,
      "the second generation began after the first ended",
    );
    // The second conversation replaced the first: both are kept, the first as a wipe.
    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((s) => s.kind), ["wipe", "final"]);
  } finally {
    await gw.close();
  }
});
