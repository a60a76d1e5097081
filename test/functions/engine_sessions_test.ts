/**
 * Engine sessions (`ENGINE_SESSIONS=true`, SGLang's `/open_session` and `session_params`),
 * through HTTP on the scripted engine: a chain's later turns send only their new tokens, and the
 * recorded chain is identical to the whole-prompt path (whole arrays); a session the engine lost
 * is caught by the prompt length it reports and the turn resent whole; rewinds send the whole
 * prompt; the session is closed when its chain ends.
 */
import assert from "node:assert/strict";
import type Anthropic from "@anthropic-ai/sdk";
import { buildDeps } from "../../functions/_deps.ts";
import { resolveConfig } from "../../lib/config/mod.ts";
import type { SglangClient } from "../../lib/engine/mod.ts";
import type { EngineCall } from "../../lib/scripted_engine/mod.ts";
import { qwen3, startGateway, type TestGateway } from "../_gateway.ts";

type Message = Anthropic.MessageParam;

const SESSIONS = { ENGINE_SESSIONS: "true" };

/** Sends `messages` (streamed or not) and returns them with the reply appended. */
async function turn(gw: TestGateway, token: string, messages: Message[], stream = false) {
  const client = gw.anthropic(token);
  const body = { model: "m", max_tokens: 64, messages };
  const reply = stream
    ? await client.messages.stream(body).finalMessage()
    : await client.messages.create(body);
  return [...messages, { role: "assistant" as const, content: reply.content }];
}

/** Three turns of one conversation, the second streamed. */
async function conversation(gw: TestGateway): Promise<string> {
  const { id, token } = await gw.openSession();
  let messages: Message[] = [{ role: "user", content: "Remember the number 7." }];
  messages = await turn(gw, token, messages);
  messages = await turn(gw, token, [...messages, { role: "user", content: "And 8." }], true);
  await turn(gw, token, [...messages, { role: "user", content: "Add them." }]);
  return id;
}

/** The ids a call carried on the wire. */
function sent(call: EngineCall): number[] {
  return call.sentIds ?? call.inputIds;
}

const reply = (n: number) => `Reply ${n}.`;

Deno.test("with engine sessions, later turns send only their new tokens and record exactly the whole-prompt path's tokens", async () => {
  let n = 0;
  const withSessions = await startGateway({ env: SESSIONS, script: () => reply(n++) });
  let m = 0;
  const without = await startGateway({ script: () => reply(m++) });
  try {
    const id = await conversation(withSessions);
    const plainId = await conversation(without);
    const calls = withSessions.engine.calls;
    const plain = without.engine.calls;
    assert.equal(calls.length, 3);
    // The engine read the same prompts either way.
    assert.deepEqual(calls.map((call) => call.inputIds), plain.map((call) => call.inputIds));
    // The first turn opened the chain's session with its whole prompt; each later one sent only
    // the tokens past the previous request's prompt and output, naming that request.
    const session = `rg-${id}:c0`;
    assert.deepEqual(withSessions.engine.sessions.opened, [session]);
    assert.deepEqual(calls.map((call) => call.session), [session, session, session]);
    assert.deepEqual(sent(calls[0]), calls[0].inputIds);
    for (const i of [1, 2]) {
      const before = calls[i - 1].inputIds.length + calls[i - 1].output!.length;
      assert.deepEqual(sent(calls[i]), calls[i].inputIds.slice(before));
      assert.ok(sent(calls[i]).length < 40, `${sent(calls[i]).length} tokens sent`);
    }
    // The samples are identical, token for token.
    const [sample] = await withSessions.samples(id);
    const [expected] = await without.samples(plainId);
    for (const field of ["prompt_ids", "response_ids", "loss_mask", "logprobs"] as const) {
      assert.deepEqual(sample[field], expected[field], field);
    }
    assert.deepEqual(sample.turns.map((t) => t.flags), [[], [], []]);
  } finally {
    await withSessions.close();
    await without.close();
  }
});

Deno.test("a session the engine lost (it restarted) is caught by the prompt length and the turn resent whole", async () => {
  let n = 0;
  const gw = await startGateway({ env: SESSIONS, script: () => reply(n++) });
  try {
    const { id, token } = await gw.openSession();
    let messages = await turn(gw, token, [{ role: "user", content: "Start." }]);
    await gw.engine.kill();
    gw.engine.revive();
    messages = await turn(gw, token, [...messages, { role: "user", content: "Go on." }]);
    messages = await turn(gw, token, [...messages, { role: "user", content: "More." }]);
    await turn(gw, token, [...messages, { role: "user", content: "Done?" }]);
    const calls = gw.engine.calls;
    // Turn 2: sent as a continuation, refused (no such session), sent again whole without one.
    assert.equal(calls[1].session, `rg-${id}:c0`);
    assert.equal(calls[1].output!.length, 0);
    assert.equal(calls[2].session, undefined);
    assert.deepEqual(sent(calls[2]).length, calls[2].inputIds.length);
    // Turn 3 opens the session again with the whole prompt; turn 4 continues it.
    assert.deepEqual(gw.engine.sessions.opened, [`rg-${id}:c0`, `rg-${id}:c0`]);
    assert.deepEqual(sent(calls[3]), calls[3].inputIds);
    const before = calls[3].inputIds.length + calls[3].output!.length;
    assert.deepEqual(sent(calls[4]), calls[4].inputIds.slice(before));
    const [sample] = await gw.samples(id);
    assert.deepEqual(sample.turns.map((t) => t.flags), [[], ["session_resent"], [], []]);
    // The recorded chain is what the engine read and sampled, whole.
    assert.deepEqual(
      [...sample.prompt_ids, ...sample.response_ids].slice(0, before),
      [...calls[3].inputIds, ...calls[3].output!],
    );
  } finally {
    await gw.close();
  }
});

Deno.test("a rewind sends the whole prompt as a new root of the session", async () => {
  let n = 0;
  const gw = await startGateway({ env: SESSIONS, script: () => reply(n++) });
  try {
    const { token } = await gw.openSession();
    const first = await turn(gw, token, [{ role: "user", content: "Start." }]);
    await turn(gw, token, [...first, { role: "user", content: "Go on." }]);
    // The client goes back to after the first reply and says something else.
    await turn(gw, token, [...first, { role: "user", content: "No, stop." }]);
    const calls = gw.engine.calls;
    assert.equal(calls.length, 3);
    assert.ok(sent(calls[1]).length < calls[1].inputIds.length);
    assert.deepEqual(sent(calls[2]), calls[2].inputIds);
    assert.equal(calls[2].session, calls[1].session);
  } finally {
    await gw.close();
  }
});

Deno.test("a chain's engine session is closed when its session closes", async () => {
  const gw = await startGateway({ env: SESSIONS, script: () => "Done." });
  try {
    const { id, token } = await gw.openSession();
    await turn(gw, token, [{ role: "user", content: "Start." }]);
    // A sub-agent: a second chain, a second engine session.
    await gw.anthropic(token).messages.create(
      { model: "m", max_tokens: 16, messages: [{ role: "user", content: "Search." }] },
      { headers: { "x-claude-code-agent-id": "agent-1" } },
    );
    assert.deepEqual(gw.engine.sessions.opened, [`rg-${id}:c0`, `rg-${id}:c1`]);
    assert.equal(gw.engine.sessions.size, 2);
    const closed = await gw.fetch(`/sessions/${id}/close`, {
      method: "POST",
      headers: { authorization: "Bearer test-admin-token-0123456789" },
    });
    assert.equal(closed.status, 200);
    // Closing is told to the engine without the close waiting on it: wait for it here.
    await (gw.deps.engine as SglangClient).sessionsClosed();
    assert.equal(gw.engine.sessions.size, 0);
    assert.deepEqual([...gw.engine.sessions.closed].sort(), [`rg-${id}:c0`, `rg-${id}:c1`]);
  } finally {
    await gw.close();
  }
});

Deno.test("a conversation the agent replaced (a wipe) has its engine session closed", async () => {
  const gw = await startGateway({ env: SESSIONS, script: () => "Done." });
  try {
    const { id, token } = await gw.openSession();
    await turn(gw, token, [{ role: "user", content: "Start." }]);
    // The same agent starts over: the first conversation is wiped.
    await turn(gw, token, [{ role: "user", content: "Something else entirely." }]);
    await (gw.deps.engine as SglangClient).sessionsClosed();
    assert.deepEqual(gw.engine.sessions.opened, [`rg-${id}:c0`, `rg-${id}:c1`]);
    assert.deepEqual(gw.engine.sessions.closed, [`rg-${id}:c0`]);
  } finally {
    await gw.close();
  }
});

Deno.test("a sub-agent's engine session is closed once its parent reads its report", async () => {
  const agentCall =
    '<tool_call>\n{"name": "Agent", "arguments": {"prompt": "TASK-A: list files"}}\n</tool_call>';
  const gw = await startGateway({
    env: SESSIONS,
    script: (_call, text) => {
      const prompt = text();
      const last = prompt.slice(prompt.lastIndexOf("<|im_start|>user"));
      if (last.includes("Delegate")) return agentCall;
      if (last.includes("TASK-A")) return "Sub-agent report: a b.";
      return "All done.";
    },
  });
  try {
    const { id, token } = await gw.openSession();
    const send = (messages: unknown[], system: string, agent?: string) =>
      gw.fetch("/v1/messages", {
        method: "POST",
        headers: { "x-api-key": token, ...(agent ? { "x-claude-code-agent-id": agent } : {}) },
        body: JSON.stringify({
          model: "m",
          max_tokens: 64,
          system,
          tools: [{ name: "Agent", input_schema: { type: "object" } }],
          messages,
        }),
      }).then((response) => response.json());
    const main = [{ role: "user", content: "Delegate the listing." }];
    const dispatch = await send(main, "You are the main agent.");
    const report = await send(
      [{ role: "user", content: "TASK-A: list files" }],
      "You are a sub-agent.",
      "agent-1",
    );
    const sessions = [`rg-${id}:c0`, `rg-${id}:c1`];
    assert.deepEqual(gw.engine.sessions.opened, sessions);
    // The parent reads the sub-agent's report: the sub-agent will not continue.
    await send([...main, { role: "assistant", content: dispatch.content }, {
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: dispatch.content[0].id,
        content: report.content[0].text,
      }],
    }], "You are the main agent.");
    await (gw.deps.engine as SglangClient).sessionsClosed();
    assert.deepEqual(gw.engine.sessions.closed, [`rg-${id}:c1`]);
    assert.equal(gw.deps.dispatches?.size, 0);
    const view = await gw.session(id);
    assert.deepEqual(
      view.chains.map((c: { id: string; children: string[] }) => [c.id, c.children]),
      [
        ["c0", ["c1"]],
        ["c1", []],
      ],
    );
  } finally {
    await gw.close();
  }
});

Deno.test("a chain's session follows it to another worker when its worker dies", async () => {
  let n = 0;
  const gw = await startGateway({ env: SESSIONS, workers: 2, script: () => reply(n++) });
  try {
    const { token } = await gw.openSession();
    let messages = await turn(gw, token, [{ role: "user", content: "Start." }]);
    const home = gw.fleet!.workers.find((worker) => worker.calls.length === 1)!;
    const other = gw.fleet!.workers.find((worker) => worker !== home)!;
    await home.kill();
    messages = await turn(gw, token, [...messages, { role: "user", content: "Go on." }]);
    await turn(gw, token, [...messages, { role: "user", content: "More." }]);
    // The other worker opened the chain's session: the whole prompt first, then a continuation.
    const [whole, next] = other.calls;
    assert.equal(other.sessions.opened.length, 1);
    assert.deepEqual(sent(whole), whole.inputIds);
    assert.deepEqual(sent(next), next.inputIds.slice(whole.inputIds.length + whole.output!.length));
  } finally {
    await gw.close();
  }
});

Deno.test("ENGINE_SESSIONS on a dialect without sessions stops start-up", async () => {
  const config = resolveConfig({
    KV_PATH: ":memory:",
    ENGINE_API: "vllm",
    ENGINE_URL: "http://127.0.0.1:9",
    ENGINE_SESSIONS: "true",
  });
  await assert.rejects(
    buildDeps(config, { tokenizer: await qwen3() }),
    /Invalid ENGINE_SESSIONS: the vllm dialect has no engine sessions/,
  );
});
