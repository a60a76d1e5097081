/**
 * `record_messages`: a session that keeps each turn's request messages beside its tokens, read
 * back by the raw export (what verl's remote-agent flow reads), written only when asked.
 */
import assert from "node:assert/strict";
import { ADMIN_TOKEN, kvSnapshot, startGateway, type TestGateway } from "../_gateway.ts";

const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

const TOOLS = [{
  type: "function",
  function: {
    name: "bash",
    description: "Run a shell command.",
    parameters: { type: "object", properties: { command: { type: "string" } } },
  },
}];
const CALL = `<tool_call>\n${
  JSON.stringify({ name: "bash", arguments: { command: "ls" } })
}\n</tool_call>`;

async function openSession(gw: TestGateway, body: Record<string, unknown>) {
  const response = await gw.fetch("/sessions", {
    method: "POST",
    headers: ADMIN,
    body: JSON.stringify(body),
  });
  assert.equal(response.status, 201);
  return await response.json() as { id: string; token: string };
}

/** Two Chat Completions turns: a question that gets a call, then the call's result; the id of
 * the call. */
async function converse(gw: TestGateway, token: string): Promise<string> {
  const post = async (messages: unknown[]) => {
    const response = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "qwen3", messages, tools: TOOLS }),
    });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    return body.choices[0].message;
  };
  const first = [
    { role: "system", content: "You are terse." },
    { role: "user", content: "What is here?" },
  ];
  const reply = await post(first);
  // The echo drops nothing the chain needs; the tool result is the only new message.
  await post([
    ...first,
    { role: "assistant", content: reply.content, tool_calls: reply.tool_calls },
    { role: "tool", tool_call_id: reply.tool_calls[0].id, content: "a.txt\nb.txt" },
  ]);
  return reply.tool_calls[0].id;
}

/** The session's raw export. */
async function raw(gw: TestGateway, id: string) {
  const response = await gw.fetch(`/sessions/${id}/samples?format=raw`, { headers: ADMIN });
  assert.equal(response.status, 200);
  return await response.json();
}

const messageKeys = async (gw: TestGateway, id: string) =>
  (await kvSnapshot(gw.kv)).filter((key) => key.startsWith(`["turn_messages","${id}"`));

Deno.test("a session with record_messages keeps what each turn's request added, as canonical messages", async () => {
  const gw = await startGateway({ script: [CALL, "Two files."] });
  try {
    const { id, token } = await openSession(gw, { record_messages: true });
    const callId = await converse(gw, token);
    const view = await (await gw.fetch(`/sessions/${id}`, { headers: ADMIN })).json();
    assert.equal(view.record_messages, true);
    const exported = await raw(gw, id);
    assert.deepEqual(exported.chains[0].turns.map((turn: { request: unknown }) => turn.request), [
      {
        messages: [
          { role: "system", content: "You are terse." },
          { role: "user", content: "What is here?" },
        ],
        tools: TOOLS,
      },
      { messages: [{ role: "tool", tool_call_id: callId, name: "bash", content: "a.txt\nb.txt" }] },
    ]);
    // The tokens are the same as without: the messages are kept beside them.
    assert.deepEqual(
      exported.chains[0].turns.map((turn: { tokens: { output: number[] } }) => turn.tokens.output),
      gw.engine.calls.map((call) => call.output),
    );
    assert.equal((await messageKeys(gw, id)).length, 2, "one chunk per turn");
    // Deleting the session deletes them.
    const deleted = await gw.fetch(`/sessions/${id}`, { method: "DELETE", headers: ADMIN });
    assert.equal(deleted.status, 204);
    assert.deepEqual(await messageKeys(gw, id), []);
  } finally {
    await gw.close();
  }
});

Deno.test("a session without record_messages keeps no messages and exports none", async () => {
  const gw = await startGateway({ script: [CALL, "Two files."] });
  try {
    const { id, token } = await openSession(gw, {});
    await converse(gw, token);
    const view = await (await gw.fetch(`/sessions/${id}`, { headers: ADMIN })).json();
    assert.equal(view.record_messages, false);
    const turns = (await raw(gw, id)).chains[0].turns;
    assert.deepEqual(turns.map((turn: Record<string, unknown>) => "request" in turn), [
      false,
      false,
    ]);
    assert.deepEqual(await messageKeys(gw, id), []);
  } finally {
    await gw.close();
  }
});

Deno.test("POST /sessions refuses a record_messages that is not a boolean, naming it", async () => {
  const gw = await startGateway();
  try {
    const before = await kvSnapshot(gw.kv);
    const response = await gw.fetch("/sessions", {
      method: "POST",
      headers: ADMIN,
      body: JSON.stringify({ record_messages: "yes" }),
    });
    const body = await response.json();
    assert.equal(response.status, 400);
    assert.match(body.error.message, /record_messages/);
    assert.deepEqual(await kvSnapshot(gw.kv), before);
  } finally {
    await gw.close();
  }
});
