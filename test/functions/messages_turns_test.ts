/**
 * How single turns are recorded: closing tokens (T5), masking, ill-formed tool calls (T6),
 * context limits, engine failures and dev sessions; and which requests the identity memo keeps.
 */
import assert from "node:assert/strict";
import { kvSnapshot, qwen3, startGateway, type TestGateway } from "../_gateway.ts";

async function ask(gw: TestGateway, token: string, body: Record<string, unknown>) {
  const response = await gw.fetch("/v1/messages", {
    method: "POST",
    headers: { "x-api-key": token, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", max_tokens: 256, ...body }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

const HI = [{ role: "user", content: "hi" }];

Deno.test("an output cut by max_tokens gets the end-of-turn token appended with mask 0", async () => {
  const tok = await qwen3();
  const gw = await startGateway({
    script: ["one two three four five six seven eight nine ten", "ok"],
  });
  try {
    const { id, token } = await gw.openSession();
    const first = await ask(gw, token, { max_tokens: 4, messages: HI });
    assert.equal(first.body.stop_reason, "max_tokens");
    const output = gw.engine.calls[0].output!;
    assert.equal(output.length, 4);
    const second = await ask(gw, token, {
      messages: [...HI, { role: "assistant", content: first.body.content }, {
        role: "user",
        content: "go on",
      }],
    });
    assert.equal(second.status, 200);
    const prefix = [...gw.engine.calls[0].inputIds, ...output, tok.eosId];
    assert.deepEqual(gw.engine.calls[1].inputIds.slice(0, prefix.length), prefix);
    const [sample] = await gw.samples(id);
    assert.deepEqual(sample.prompt_ids, gw.engine.calls[0].inputIds);
    assert.deepEqual(sample.response_ids.slice(0, 5), [...output, tok.eosId]);
    assert.deepEqual(sample.loss_mask.slice(0, 5), [1, 1, 1, 1, 0]);
    assert.equal(sample.turns[0].finish_reason, "length");
  } finally {
    await gw.close();
  }
});

Deno.test("a matched stop sequence ends the turn, stays in the tokens and leaves the text", async () => {
  const tok = await qwen3();
  const gw = await startGateway({ script: ["Answer: 42\nEND more text"] });
  try {
    const { id, token } = await gw.openSession();
    const reply = await ask(gw, token, { messages: HI, stop_sequences: ["END"] });
    assert.equal(reply.body.stop_reason, "stop_sequence");
    assert.equal(reply.body.stop_sequence, "END");
    assert.deepEqual(reply.body.content, [{ type: "text", text: "Answer: 42" }]);
    const output = gw.engine.calls[0].output!;
    assert.match(tok.decode(output), /END$/);
    const [sample] = await gw.samples(id);
    assert.deepEqual(sample.response_ids, [...output, tok.eosId]);
    assert.deepEqual(sample.loss_mask, [...output.map(() => 1), 0]);
    assert.equal(gw.engine.calls[0].sampling.no_stop_trim, true);
  } finally {
    await gw.close();
  }
});

Deno.test("a malformed tool call comes back as text and flags the turn ill_formed", async () => {
  const bad = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"\n</tool_call>';
  const unknown = '<tool_call>\n{"name": "Rm", "arguments": {}}\n</tool_call>';
  const gw = await startGateway({ script: [`Trying.\n${bad}`, unknown] });
  try {
    const { id, token } = await gw.openSession();
    const tools = [{ name: "Bash", input_schema: { type: "object" } }];
    const first = await ask(gw, token, { messages: HI, tools });
    assert.equal(first.status, 200);
    assert.equal(first.body.stop_reason, "end_turn");
    assert.deepEqual(first.body.content, [{ type: "text", text: `Trying.\n${bad}` }]);
    const second = await ask(gw, token, {
      tools,
      messages: [...HI, { role: "assistant", content: first.body.content }, {
        role: "user",
        content: "again",
      }],
    });
    assert.deepEqual(second.body.content, [{ type: "text", text: unknown }]);
    const [sample] = await gw.samples(id);
    assert.deepEqual(sample.turns.map((t) => t.flags), [["ill_formed"], ["ill_formed"]]);
    assert.ok(sample.loss_mask.includes(1), "ill-formed turns are still sampled tokens");
  } finally {
    await gw.close();
  }
});

for (const policy of [undefined, "keep", "mask"]) {
  Deno.test(
    `an output that does not survive decode → encode is recorded exactly, flagged, and ${
      policy === "mask"
        ? "masked under ROUNDTRIP_POLICY=mask"
        : `trained as sampled (${policy ?? "default"})`
    }`,
    async () => {
      const tok = await qwen3();
      const tokens = [...tok.encode("There is 1"), ...tok.encode(" fi"), ...tok.encode("le.")];
      const gw = await startGateway({
        script: [{ tokens }],
        env: policy ? { ROUNDTRIP_POLICY: policy } : {},
      });
      try {
        const { id, token } = await gw.openSession();
        const reply = await ask(gw, token, { messages: HI });
        assert.deepEqual(reply.body.content, [{ type: "text", text: "There is 1 file." }]);
        const [sample] = await gw.samples(id);
        assert.deepEqual(sample.response_ids, [...tokens, tok.eosId]);
        const bit = policy === "mask" ? 0 : 1;
        assert.deepEqual(sample.loss_mask, sample.response_ids.map(() => bit));
        assert.deepEqual(
          sample.turns[0].flags,
          policy === "mask" ? ["roundtrip_mismatch", "masked"] : ["roundtrip_mismatch"],
        );
      } finally {
        await gw.close();
      }
    },
  );
}

Deno.test("a prompt over the context window is refused in Anthropic's words; max_tokens is clamped", async () => {
  const gw = await startGateway({ env: { CONTEXT_LENGTH: "300" }, script: ["fine"] });
  try {
    const { token } = await gw.openSession();
    const before = await kvSnapshot(gw.kv);
    const long = await ask(gw, token, {
      messages: [{ role: "user", content: "word ".repeat(400) }],
    });
    assert.equal(long.status, 400);
    assert.equal(long.body.error.type, "invalid_request_error");
    // Refused as soon as the count passed the window: a lower bound, in the wording Claude Code
    // reads its counts from (`prompt is too long[^0-9]*(\d+)\s*tokens?\s*>\s*(\d+)`).
    assert.match(
      long.body.error.message,
      /^prompt is too long: more than \d+ tokens > 299 maximum$/,
    );
    const [, counted, maximum] = long.body.error.message.match(
      /prompt is too long[^0-9]*(\d+)\s*tokens?\s*>\s*(\d+)/,
    );
    assert.ok(Number(counted) >= 300 && Number(maximum) === 299, long.body.error.message);
    assert.deepEqual(await kvSnapshot(gw.kv), before);
    const ok = await ask(gw, token, { max_tokens: 100_000, messages: HI });
    assert.equal(ok.status, 200);
    const call = gw.engine.calls[0];
    assert.equal(call.sampling.max_new_tokens, 300 - call.inputIds.length);
  } finally {
    await gw.close();
  }
});

Deno.test("an engine that cannot take the turn yields a retryable 529 before the stream starts", async () => {
  const gw = await startGateway();
  try {
    const { id, token } = await gw.openSession();
    for (const stream of [false, true]) {
      gw.engine.fault({ kind: "unavailable" });
      const reply = await ask(gw, token, { messages: HI, stream });
      assert.equal(reply.status, 529);
      assert.equal(reply.body.error.type, "overloaded_error");
      assert.equal(reply.headers.get("x-should-retry"), "true");
      assert.ok(Number(reply.headers.get("retry-after")) > 0);
    }
    assert.deepEqual(await gw.samples(id), []);
  } finally {
    await gw.close();
  }
});

Deno.test("an engine-side abort (a weight update) is resumed and counted, with both weight versions", async () => {
  const gw = await startGateway({ script: ["alpha beta gamma delta epsilon"] });
  try {
    const { id, token } = await gw.openSession();
    gw.engine.fault({ kind: "abort", after: 2, weightVersion: "v2" });
    // The resumed call continues the same reply: script it as what is left.
    const tok = gw.tokenizer;
    const full = tok.encode("alpha beta gamma delta epsilon");
    gw.engine.setScript([{ tokens: full }, { tokens: full.slice(2) }]);
    const reply = await ask(gw, token, { messages: HI });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body.content, [{
      type: "text",
      text: "alpha beta gamma delta epsilon",
    }]);
    const [first, second] = gw.engine.calls;
    assert.deepEqual(second.inputIds, [...first.inputIds, ...full.slice(0, 2)]);
    const [sample] = await gw.samples(id);
    assert.deepEqual(sample.response_ids, [...full, tok.eosId]);
    assert.deepEqual(sample.turns[0].flags, ["engine_aborted"]);
    assert.deepEqual(sample.turns[0].weight_versions, ["default", "v2"]);
  } finally {
    await gw.close();
  }
});

Deno.test("with DEV_OPEN_SESSIONS an unknown token opens a session named after it", async () => {
  const gw = await startGateway({ env: { DEV_OPEN_SESSIONS: "true" }, script: ["hello"] });
  try {
    const reply = await ask(gw, "my-run-1", { messages: HI });
    assert.equal(reply.status, 200);
    const [sample] = await gw.samples("my-run-1");
    assert.equal(sample.kind, "final");
    const bad = await ask(gw, "my-run-2", {
      messages: [{ role: "user", content: [{ type: "nope" }] }],
    });
    assert.equal(bad.status, 400);
    assert.equal(
      (await gw.deps.kv.get(["session", "my-run-2"])).value,
      null,
      "nothing opened for a bad request",
    );
  } finally {
    await gw.close();
  }
});

Deno.test("a request that no longer extends the chain starts a new chain and keeps the old one", async () => {
  const gw = await startGateway({ script: ["first answer", "another answer"] });
  try {
    const { id, token } = await gw.openSession();
    await ask(gw, token, { messages: HI });
    await ask(gw, token, { messages: [{ role: "user", content: "something else" }] });
    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.kind]), [["c0", "wipe"], ["c1", "final"]]);
    assert.deepEqual(samples[1].prompt_ids, gw.engine.calls[1].inputIds);
  } finally {
    await gw.close();
  }
});

Deno.test("turns over both protocols keep their conversation in the identity memo; count_tokens does not", async () => {
  const gw = await startGateway({ script: ["ok", "ok"] });
  try {
    const { token } = await gw.openSession();
    assert.equal(gw.deps.identities.held, 0);
    assert.equal((await ask(gw, token, { messages: HI })).status, 200);
    const afterTurn = gw.deps.identities.held;
    assert.ok(afterTurn > 0);
    const count = await gw.fetch("/v1/messages/count_tokens", {
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(500) }] }),
    });
    assert.equal(count.status, 200);
    assert.equal(gw.deps.identities.held, afterTurn);
    const other = await gw.openSession();
    const chat = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${other.token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: HI }),
    });
    assert.equal(chat.status, 200);
    assert.ok(gw.deps.identities.held > afterTurn);
  } finally {
    await gw.close();
  }
});
