/**
 * Client strings that name JavaScript's own properties (`constructor`, `__proto__`…) are plain
 * strings: agent ids route to chains of their own, metadata keys round-trip or are refused,
 * metadata filters match own keys only; two sub-agents asking the same question get two answers.
 */
import assert from "node:assert/strict";
import { ADMIN_HEADERS, kvSnapshot, startGateway, type TestGateway } from "../_gateway.ts";

const PROTOTYPE_NAMES = ["constructor", "valueOf", "toString", "hasOwnProperty", "__proto__"];

function ask(
  gw: TestGateway,
  token: string,
  headers: Record<string, string>,
  content = "Hello",
): Promise<Response> {
  return gw.fetch("/v1/messages", {
    method: "POST",
    headers: { "x-api-key": token, ...headers },
    body: JSON.stringify({
      model: "qwen3",
      max_tokens: 64,
      system: "You are a sub-agent.",
      messages: [{ role: "user", content }],
    }),
  });
}

Deno.test("agent ids named after Object.prototype's properties each get a chain of their own", async () => {
  const gw = await startGateway({ script: () => "Done." });
  try {
    const { id, token } = await gw.openSession();
    for (const name of PROTOTYPE_NAMES) {
      const response = await ask(gw, token, {
        "x-claude-code-agent-id": name,
        "x-claude-code-parent-agent-id": PROTOTYPE_NAMES.find((other) => other !== name)!,
      }, `Task of ${name}`);
      assert.equal(response.status, 200, await response.clone().text());
      await response.body?.cancel();
    }
    const view = await gw.session(id);
    assert.deepEqual(
      view.chains.map((chain: { agent_id: string; kind: string; turns: number }) => [
        chain.agent_id,
        chain.kind,
        chain.turns,
      ]),
      PROTOTYPE_NAMES.map((name) => [name, "subagent", 1]),
    );
    // A second turn of each agent extends its own chain.
    const again = await ask(gw, token, { "x-claude-code-agent-id": "constructor" }, "More");
    assert.equal(again.status, 200);
    await again.body?.cancel();
    assert.equal((await gw.session(id)).chains.length, PROTOTYPE_NAMES.length + 1);
  } finally {
    await gw.close();
  }
});

Deno.test("a metadata key __proto__ is refused anywhere in a body, naming where, and writes nothing", async () => {
  const gw = await startGateway();
  try {
    const before = await kvSnapshot(gw.kv);
    for (
      const body of [
        '{"metadata": {"__proto__": {"admin": true}}}',
        '{"metadata": {"task": {"nested": {"__proto__": 1}}}}',
      ]
    ) {
      const response = await gw.fetch("/sessions", {
        method: "POST",
        headers: ADMIN_HEADERS,
        body,
      });
      assert.equal(response.status, 400);
      const error = await response.json();
      assert.equal(error.error.type, "invalid_request_error");
      assert.match(
        error.error.message,
        /^metadata\.(task\.nested\.)?__proto__: key "__proto__" is not allowed$/,
      );
    }
    assert.deepEqual(await kvSnapshot(gw.kv), before);
  } finally {
    await gw.close();
  }
});

Deno.test("metadata keys named after Object.prototype's properties round-trip and filter by own keys only", async () => {
  const gw = await startGateway();
  try {
    const plain = await gw.openSession({ task: "t1" });
    const named = await gw.openSession({ constructor: "c", toString: "s", hasOwnProperty: "h" });
    assert.deepEqual((await gw.session(named.id)).metadata, {
      constructor: "c",
      toString: "s",
      hasOwnProperty: "h",
    });
    const list = async (query: string) => {
      const response = await gw.fetch(`/sessions?${query}`, { headers: ADMIN_HEADERS });
      assert.equal(response.status, 200);
      return (await response.json()).sessions.map((s: { id: string }) => s.id).sort();
    };
    assert.deepEqual(await list("metadata.constructor=c"), [named.id]);
    assert.deepEqual(
      await list(`metadata.constructor=${encodeURIComponent(String(Object))}`),
      [],
      "an inherited constructor matches nothing",
    );
    assert.deepEqual(await list("metadata.toString=s&metadata.hasOwnProperty=h"), [named.id]);
    assert.deepEqual(await list("metadata.__proto__=x"), []);
    assert.deepEqual(await list("metadata.task=t1"), [plain.id]);
  } finally {
    await gw.close();
  }
});

Deno.test("two sub-agents sending an identical body get two engine calls and two chains; each retry replays its own", async () => {
  let n = 0;
  const gw = await startGateway({ script: () => `Answer ${++n}.` });
  try {
    const { id, token } = await gw.openSession();
    const replies: string[] = [];
    for (const agent of ["agent-a", "agent-b", "agent-a", "agent-b"]) {
      const response = await ask(gw, token, { "x-claude-code-agent-id": agent }, "Same task");
      assert.equal(response.status, 200);
      replies.push(JSON.stringify((await response.json()).content));
    }
    assert.equal(gw.engine.calls.length, 2);
    assert.notEqual(replies[0], replies[1]);
    assert.equal(replies[2], replies[0], "agent-a's retry replays agent-a's answer");
    assert.equal(replies[3], replies[1], "agent-b's retry replays agent-b's answer");
    const view = await gw.session(id);
    assert.deepEqual(
      view.chains.map((
        chain: { agent_id: string; turns: number },
      ) => [chain.agent_id, chain.turns]),
      [["agent-a", 1], ["agent-b", 1]],
    );
  } finally {
    await gw.close();
  }
});

Deno.test("metadata objects holding toString or valueOf keys are filtered and exported as JSON", async () => {
  const gw = await startGateway({ script: () => "Done." });
  try {
    const { id, token } = await gw.openSession({
      group_id: { toString: 1 },
      nested: { valueOf: 2 },
    });
    const listed = await gw.fetch(
      `/sessions?metadata.nested=${encodeURIComponent('{"valueOf":2}')}`,
      { headers: ADMIN_HEADERS },
    );
    assert.equal(listed.status, 200);
    assert.deepEqual((await listed.json()).sessions.map((s: { id: string }) => s.id), [id]);
    const response = await ask(gw, token, {}, "Hello");
    assert.equal(response.status, 200);
    await response.body?.cancel();
    const samples = await gw.fetch(`/sessions/${id}/samples`, { headers: ADMIN_HEADERS });
    assert.equal(samples.status, 200);
    assert.equal((await samples.json()).samples[0].group_id, '{"toString":1}');
  } finally {
    await gw.close();
  }
});
