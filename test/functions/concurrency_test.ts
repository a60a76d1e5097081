/**
 * Many sessions at once through HTTP: every chain is token-exact, requests racing on one session
 * are serialized, and a slow session does not hold the others up.
 */
import assert from "node:assert/strict";
import type { Script } from "../../lib/scripted_engine/mod.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { startGateway, type TestGateway } from "../_gateway.ts";

const TOOLS = [{ name: "Bash", input_schema: { type: "object" } }];
const bashCall = (command: string) =>
  `<think>\nRun ${command}.\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": {"command": "${command}"}}\n</tool_call>`;

interface ReplyJson {
  content: { type: string; id?: string }[];
  stop_reason: string;
}

async function post(gw: TestGateway, token: string, messages: unknown[], label = "") {
  const response = await gw.fetch("/v1/messages", {
    method: "POST",
    headers: { "x-api-key": token, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", max_tokens: 256, tools: TOOLS, messages }),
  });
  assert.equal(response.status, 200, `${label} ${await response.clone().text()}`);
  return await response.json() as ReplyJson;
}

/** The conversation after `reply`: the reply echoed back and its tool results. */
function followUp(messages: unknown[], reply: ReplyJson, turn: number): unknown[] {
  const uses = reply.content.filter((block) => block.type === "tool_use");
  assert.ok(uses.length > 0, `turn ${turn} called a tool`);
  return [...messages, { role: "assistant", content: reply.content }, {
    role: "user",
    content: uses.map((use) => ({ type: "tool_result", tool_use_id: use.id, content: `${turn}` })),
  }];
}

/** Runs `turns` turns of one session's conversation, one after the other. */
async function converse(gw: TestGateway, session: { id: string; token: string }, turns: number) {
  let messages: unknown[] = [{ role: "user", content: `Task of ${session.id}.` }];
  for (let k = 0; k < turns; k++) {
    messages = followUp(messages, await post(gw, session.token, messages, session.id), k);
  }
}

/** Polls `condition` every 5 ms until it holds, failing after `deadlineMs`. */
async function until(condition: () => boolean, what: string, deadlineMs = 10_000) {
  const deadline = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A tool call every time, its command varying with the prompt's length. */
const toolEveryTime: Script = (call) => bashCall(`echo ${call.inputIds.length}`);

Deno.test("64 sessions of 20 turns driven concurrently all record token-exact chains", async () => {
  const gw = await startGateway({ script: toolEveryTime });
  try {
    const sessions = await Promise.all([...Array(64)].map(() => gw.openSession()));
    await Promise.all(sessions.map((session) => converse(gw, session, 20)));
    assert.equal(gw.engine.calls.length, 64 * 20);
    const matched = new Set<string>();
    for (const { id } of sessions) {
      const samples = await gw.samples(id);
      assert.equal(samples.length, 1, `${id}: one chain`);
      const calls = callsOfSample(gw.engine.calls, samples[0]);
      assert.equal(calls.length, 20, `${id}: twenty engine calls`);
      for (const call of calls) matched.add(call.rid);
      assertChainExact(calls, samples, id);
      assert.ok(samples[0].turns.every((turn) => turn.flags.length === 0), `${id}: no flags`);
    }
    assert.equal(matched.size, 64 * 20, "every engine call belongs to exactly one session");
  } finally {
    await gw.close();
  }
});

Deno.test("five different requests racing on one session are answered one after another", async () => {
  const gw = await startGateway({ script: toolEveryTime, latencyMs: 5 });
  try {
    const { id, token } = await gw.openSession();
    const replies = await Promise.all(
      [...Array(5)].map((_, i) =>
        post(gw, token, [{ role: "user", content: `Request ${i}.` }], `request ${i}`)
      ),
    );
    assert.equal(replies.length, 5);
    const calls = gw.engine.calls.toSorted((x, y) => x.receivedAt - y.receivedAt);
    assert.equal(calls.length, 5, "one generation per request");
    for (let k = 1; k < calls.length; k++) {
      assert.ok(calls[k - 1].finishedAt !== undefined, `call ${k - 1} finished`);
      assert.ok(
        calls[k].receivedAt >= calls[k - 1].finishedAt!,
        `call ${k} began after call ${k - 1} ended`,
      );
    }
    // Each request replaced the conversation before it: five one-turn chains, the last final.
    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((s) => [s.kind, s.turns.length]), [
      ["wipe", 1],
      ["wipe", 1],
      ["wipe", 1],
      ["wipe", 1],
      ["final", 1],
    ]);
    assert.deepEqual(
      samples.map((s) => s.response_ids.filter((_, i) => s.loss_mask[i] === 1)),
      calls.map((call) => call.output),
      "the chains hold the calls' outputs in the order the calls ran",
    );
  } finally {
    await gw.close();
  }
});

Deno.test("a slow session does not hold up another session's turns", async () => {
  // 40 tokens (and the end-of-turn token) at 50 ms each.
  const slow = "<think>\nThis takes a while.\n</think>\n\n" + "Still thinking it over. ".repeat(6);
  const gw = await startGateway({
    script: (call, promptText) =>
      promptText().includes("Take your time.")
        ? { text: slow, latencyMs: 50 }
        : toolEveryTime(call, promptText),
  });
  try {
    const [slowSession, fast] = await Promise.all([gw.openSession(), gw.openSession()]);
    const order: string[] = [];
    const slowTurn = post(gw, slowSession.token, [{ role: "user", content: "Take your time." }])
      .then(() => order.push("slow"));
    await until(() => gw.engine.calls.length === 1, "the slow call reached the engine");
    const slowCall = gw.engine.calls[0];
    assert.ok(slowCall.inputIds.length > 0);
    await converse(gw, fast, 10);
    order.push("fast");
    assert.equal(slowCall.finishedAt, undefined, "the slow call is still generating");
    await slowTurn;
    assert.deepEqual(order, ["fast", "slow"]);
    const fastCalls = gw.engine.calls.slice(1);
    assert.equal(fastCalls.length, 10);
    assert.ok(
      fastCalls.every((call) => call.finishedAt! <= slowCall.finishedAt!),
      "every fast call finished before the slow one",
    );
    assert.ok(slowCall.output!.length >= 40, "the slow reply was long");
    assertChainExact(fastCalls, await gw.samples(fast.id), "fast");
    assertChainExact([slowCall], await gw.samples(slowSession.id), "slow");
  } finally {
    await gw.close();
  }
});
