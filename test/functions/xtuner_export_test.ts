/**
 * `GET /sessions/:id/samples?format=xtuner` on the Claude Code episode recorded from the real CLI
 * (fixtures/claude_code/episode.json), replayed without the CLI: the trajectory record's messages
 * are, token for token, the prompts the engine read and the outputs it sampled, with the reward
 * the trainer set.
 */
import assert from "node:assert/strict";
import { type EngineCall, scriptedLogprob } from "../../lib/scripted_engine/mod.ts";
import type { XtunerMessage, XtunerRecord } from "../../lib/segment/mod.ts";
import { episode, replay } from "../_claude_episode.ts";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "../_gateway.ts";

async function openSession(gw: TestGateway, body: Record<string, unknown>) {
  const response = await gw.fetch("/sessions", {
    method: "POST",
    headers: ADMIN_HEADERS,
    body: JSON.stringify(body),
  });
  assert.equal(response.status, 201);
  return await response.json() as { id: string; token: string };
}

async function trainerGet(gw: TestGateway, path: string) {
  const response = await gw.fetch(path, { headers: ADMIN_HEADERS });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  return await response.json();
}

async function xtunerRecords(gw: TestGateway, id: string) {
  return await trainerGet(gw, `/sessions/${id}/samples?format=xtuner`) as {
    records: XtunerRecord[];
    dropped: unknown[];
  };
}

/** The messages before the `k`-th sampled one, their ids joined: the prompt of turn `k`. */
function promptOf(messages: readonly XtunerMessage[], k: number): number[] {
  const at = messages.filter((m) => m.sampled)[k];
  return messages.slice(0, messages.indexOf(at)).flatMap((m) => m.token_ids);
}

function assertEngineExact(record: XtunerRecord, calls: readonly EngineCall[]): void {
  const { messages } = record.agent;
  const whole = messages.flatMap((m) => m.token_ids);
  assert.deepEqual(whole, [...record.prompt_ids, ...record.response_ids]);
  assert.deepEqual(whole, [...calls.at(-1)!.inputIds, ...calls.at(-1)!.output!]);
  const sampled = messages.filter((m) => m.sampled);
  assert.deepEqual(sampled.map((m) => m.token_ids), calls.map((call) => call.output));
  assert.deepEqual(
    sampled.map((m) => m.logprobs),
    calls.map((call) => call.output!.map((token, i) => scriptedLogprob(token, i))),
  );
  assert.deepEqual(sampled.map((m) => m.loss_mask), calls.map((call) => call.output!.map(() => 1)));
  calls.forEach((call, k) => assert.deepEqual(promptOf(messages, k), call.inputIds, `turn ${k}`));
}

Deno.test("the recorded Claude Code episode exports as an xtuner trajectory of the engine's exact tokens, with the trainer's reward", async () => {
  const gw = await startGateway({ script: episode.replies });
  try {
    const { id, token } = await gw.openSession({ group_id: "g-1" });
    const { replies } = await replay(gw, token);
    const reward = { score: 0.75, tests_passed: 2, judger: "rule" };
    const rewarded = await gw.fetch(`/sessions/${id}/reward`, {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify(reward),
    });
    assert.equal(rewarded.status, 200);
    await rewarded.body?.cancel();

    const { records, dropped } = await xtunerRecords(gw, id);
    assert.deepEqual(dropped, []);
    assert.equal(records.length, 1);
    const [record] = records;
    const calls = gw.engine.calls;
    assert.equal(calls.length, episode.requests.length);
    assertEngineExact(record, calls);

    const { messages } = record.agent;
    // The system prompt with the tools; the task (the mid-conversation system message folded
    // in); then each output and the tool result it got.
    assert.deepEqual(messages.map((m) => m.role), [
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
    ]);
    assert.match(messages[0].content, /^<\|im_start\|>system\n/);
    assert.match(messages[0].content, /"name": "Write"/);
    assert.match(messages[1].content, /Write a script that prints a greeting and run it\./);
    for (const k of [1, 3, 5, 7]) {
      assert.match(messages[k].content, /<\|im_end\|>\n<\|im_start\|>assistant\n$/, `message ${k}`);
    }
    for (const k of [3, 5, 7]) {
      assert.match(messages[k].content, /^\n<\|im_start\|>user\n<tool_response>\n/);
    }
    assert.match(messages[7].content, /hello from the script/);
    // The calls are the ones the agent received.
    const sampled = messages.filter((m) => m.sampled);
    assert.deepEqual(
      sampled.map((m) => m.tool_calls?.map((call) => call.function) ?? []),
      replies.map((reply) =>
        reply.content.flatMap((block) =>
          block.type === "tool_use" ? [{ name: block.name, arguments: block.input }] : []
        )
      ),
    );
    assert.deepEqual(sampled.map((m) => m.finish_reason), Array(4).fill("end_of_turn"));

    assert.deepEqual(record.reward, reward);
    assert.equal(record.status, "completed");
    assert.equal(record.finish_reason, "end_of_turn");
    assert.equal(record.session_id, id);
    assert.equal(record.group_id, "g-1");
    assert.equal(record.kind, "final");
    assert.deepEqual(record.prompt_ids, calls[0].inputIds, "the first call's prompt, whole");
    assert.equal(record.prompt_len, calls[0].inputIds.length);
    assert.equal(record.response_len, record.response_ids.length);
    assert.equal(record.raw_prompt, gw.tokenizer.decode(calls[0].inputIds));
    assert.equal(record.agent.tool_turns, 3);
    assert.equal(record.agent.tools, null, "a session without record_messages keeps no tools");
    assert.ok(record.agent.tool_names.includes("Write"));
    // The same arrays as the default export.
    const [sample] = await gw.samples(id);
    assert.deepEqual(
      [record.prompt_ids, record.response_ids, record.loss_mask, record.logprobs],
      [sample.prompt_ids, sample.response_ids, sample.loss_mask, sample.logprobs],
    );
  } finally {
    await gw.close();
  }
});

Deno.test("a session recording messages gives its xtuner record the tools of the first request", async () => {
  const gw = await startGateway({ script: episode.replies });
  try {
    const { id, token } = await openSession(gw, { record_messages: true });
    await replay(gw, token);
    const { records: [record] } = await xtunerRecords(gw, id);
    assertEngineExact(record, gw.engine.calls);
    assert.equal(record.reward, null, "no reward set yet");
    const raw = await trainerGet(gw, `/sessions/${id}/samples?format=raw`);
    const tools = raw.chains[0].turns[0].request.tools;
    assert.equal(tools.length, (episode.requests[0].body.tools as unknown[]).length);
    assert.deepEqual(record.agent.tools, tools);
    assert.deepEqual(
      record.agent.tools!.map((tool) => tool.function.name).sort(),
      [...record.agent.tool_names].sort(),
    );
  } finally {
    await gw.close();
  }
});
