import assert from "node:assert/strict";
import {
  EngineRejectedError,
  EngineUnavailableError,
  newRid,
  SglangClient,
} from "../../lib/engine/mod.ts";
import { PromptIds } from "../../lib/engine/prompt_ids.ts";
import { type Script, scriptedLogprob } from "../../lib/scripted_engine/mod.ts";
import { PROMPT, RID, sampling, until, withEngine } from "./_client.ts";

Deno.test("newRid() returns distinct 32-hex-digit request ids", () => {
  const rids = new Set(Array.from({ length: 100 }, newRid));
  assert.equal(rids.size, 100);
  for (const rid of rids) assert.match(rid, RID);
});

Deno.test("SglangClient.generate() sends input_ids, a 32-hex rid and the sampling params", async () => {
  await withEngine({ script: ["Hello."] }, async ({ engine, client }) => {
    const params = sampling(64);
    const generation = await client.generate({
      inputIds: new Uint32Array(PROMPT),
      sampling: params,
    });
    assert.equal(engine.calls.length, 1);
    const [call] = engine.calls;
    assert.match(call.rid, RID);
    assert.equal(generation.rid, call.rid);
    assert.deepEqual(call.inputIds, PROMPT);
    assert.deepEqual(call.sampling, JSON.parse(JSON.stringify(params)));
  });
});

Deno.test("SglangClient.generate() uses the caller's rid for the first call", async () => {
  await withEngine({ script: ["Hi"] }, async ({ engine, client }) => {
    const rid = newRid();
    const generation = await client.generate({ rid, inputIds: PROMPT, sampling: sampling() });
    assert.equal(generation.rid, rid);
    assert.equal(engine.calls[0].rid, rid);
  });
});

Deno.test("SglangClient.generate() asks for logprobs without streaming", async () => {
  const bodies: Record<string, unknown>[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    bodies.push(await request.json());
    return Response.json({
      output_ids: [7, 151_645],
      meta_info: {
        finish_reason: { type: "stop", matched: 151_645 },
        output_token_logprobs: [[-0.5, 7, null], [-0.25, 151_645, null]],
        weight_version: "default",
      },
    });
  });
  const client = new SglangClient(`http://127.0.0.1:${server.addr.port}`, {
    connections: 1,
    timeoutMs: 5_000,
  });
  try {
    await client.generate({ inputIds: PROMPT, sampling: sampling(16) });
    assert.equal(bodies.length, 1);
    assert.equal(bodies[0].return_logprob, true);
    assert.equal(bodies[0].stream, false);
    assert.deepEqual(Object.keys(bodies[0]).sort(), [
      "input_ids",
      "return_logprob",
      "rid",
      "sampling_params",
      "stream",
    ]);
    assert.equal((bodies[0].sampling_params as Record<string, unknown>).max_new_tokens, 16);
  } finally {
    await client.close();
    await server.shutdown();
  }
});

Deno.test("SglangClient.generate() returns the output ids with their aligned logprobs", async () => {
  await withEngine({ script: ["The answer is 42."] }, async ({ client, tokenizer }) => {
    const generation = await client.generate({ inputIds: PROMPT, sampling: sampling() });
    const expected = [...tokenizer.encode("The answer is 42."), tokenizer.eosId];
    assert.deepEqual(generation.outputIds, expected);
    assert.deepEqual(generation.logprobs, expected.map((t, i) => scriptedLogprob(t, i)));
    assert.deepEqual(generation.weightVersions, ["default"]);
    assert.equal(generation.aborts, 0);
    assert.ok(generation.engineMs >= 0);
  });
});

Deno.test("SglangClient.generate() maps a stop on the end-of-turn token to its id", async () => {
  await withEngine({ script: ["Done."] }, async ({ client, tokenizer }) => {
    const generation = await client.generate({ inputIds: PROMPT, sampling: sampling() });
    assert.deepEqual(generation.finish, { type: "stop", matched: tokenizer.eosId });
  });
});

Deno.test("SglangClient.generate() maps a stop string to the string matched", async () => {
  await withEngine(
    { script: ["The answer is 42.</answer> more text"] },
    async ({ client, tokenizer }) => {
      const generation = await client.generate({
        inputIds: PROMPT,
        sampling: sampling(256, ["</answer>"]),
      });
      assert.deepEqual(generation.finish, { type: "stop", matched: "</answer>" });
      assert.deepEqual(generation.outputIds, tokenizer.encode("The answer is 42.</answer>"));
    },
  );
});

Deno.test("SglangClient.generate() maps max_new_tokens reached to length", async () => {
  await withEngine({ script: ["The answer is 42."] }, async ({ client, tokenizer }) => {
    const generation = await client.generate({ inputIds: PROMPT, sampling: sampling(3) });
    assert.deepEqual(generation.finish, { type: "length" });
    assert.deepEqual(generation.outputIds, tokenizer.encode("The answer is 42.").slice(0, 3));
    assert.equal(generation.logprobs.length, 3);
  });
});

Deno.test("SglangClient.generate() aborts the engine request when the caller aborts", async () => {
  let arrived!: () => void;
  const called = new Promise<void>((resolve) => arrived = resolve);
  const script: Script = () => {
    arrived();
    return "word ".repeat(400);
  };
  await withEngine({ script, latencyMs: 20 }, async ({ engine, client }) => {
    const controller = new AbortController();
    const reason = new Error("client left");
    const generating = client.generate({
      inputIds: PROMPT,
      sampling: sampling(1_000),
      signal: controller.signal,
    });
    await called;
    controller.abort(reason);
    await assert.rejects(generating, (error) => error === reason);
    const rid = engine.calls[0].rid;
    await until(() => engine.abortRequests.includes(rid));
    await until(() => engine.calls[0].output !== undefined);
    assert.ok(engine.calls[0].output!.length < 400, `${engine.calls[0].output!.length} tokens`);
  });
});

Deno.test("SglangClient.generate() rejects at once on an already aborted signal", async () => {
  await withEngine({ script: ["Hi"] }, async ({ engine, client }) => {
    const reason = new Error("gone");
    await assert.rejects(
      client.generate({
        inputIds: PROMPT,
        sampling: sampling(),
        signal: AbortSignal.abort(reason),
      }),
      (error) => error === reason,
    );
    assert.equal(engine.calls.length, 0);
  });
});

Deno.test("SglangClient.generate() gives up after timeoutMs with EngineUnavailableError and aborts", async () => {
  await withEngine(
    { script: ["word ".repeat(400)], latencyMs: 20, timeoutMs: 100 },
    async ({ engine, client }) => {
      await assert.rejects(
        client.generate({ inputIds: PROMPT, sampling: sampling(1_000) }),
        (error) => error instanceof EngineUnavailableError && /within 100 ms/.test(error.message),
      );
      await until(() => engine.abortRequests.includes(engine.calls[0].rid));
    },
  );
});

Deno.test("SglangClient.generate() throws EngineUnavailableError on HTTP 503", async () => {
  await withEngine({ script: ["Hi"] }, async ({ engine, client }) => {
    engine.fault({ kind: "unavailable" });
    await assert.rejects(
      client.generate({ inputIds: PROMPT, sampling: sampling() }),
      (error) => error instanceof EngineUnavailableError && /503/.test(error.message),
    );
    const generation = await client.generate({ inputIds: PROMPT, sampling: sampling() });
    assert.equal(generation.finish.type, "stop");
  });
});

Deno.test("SglangClient.generate() throws EngineRejectedError with the engine's message on HTTP 400", async () => {
  await withEngine({ script: ["Hi"] }, async ({ engine, client }) => {
    engine.fault({
      kind: "reject",
      message: "The input (9 tokens) is longer than the model's context length",
    });
    await assert.rejects(
      client.generate({ inputIds: PROMPT, sampling: sampling() }),
      (error) =>
        error instanceof EngineRejectedError &&
        error.message.includes("The input (9 tokens) is longer than the model's context length"),
    );
  });
});

Deno.test("SglangClient.generate() throws EngineRejectedError on empty input_ids", async () => {
  await withEngine({}, async ({ client }) => {
    await assert.rejects(
      client.generate({ inputIds: [], sampling: sampling() }),
      (error) =>
        error instanceof EngineRejectedError && /input_ids cannot be empty/.test(error.message),
    );
  });
});

Deno.test("SglangClient.generate() sends a long prompt whole, streamed or not, on one connection", async () => {
  await withEngine({ script: ["Done."] }, async ({ engine }) => {
    const client = new SglangClient(engine.url, { connections: 1, timeoutMs: 30_000 });
    try {
      // 40k ids: over 200 KB of digits, past the size a body is copied at.
      const long = Array.from({ length: 40_000 }, (_, i) => (i * 7_919) % 151_000);
      const history = PromptIds.from(long.slice(0, 30_000));
      assert.ok(history.concat(long.slice(30_000)).ascii().length > 200_000);
      const sent = [
        { inputIds: new Uint32Array(long), expected: long },
        { inputIds: history.concat(long.slice(30_000)), expected: long, stream: true },
        { inputIds: history.concat([7, 8]), expected: [...long.slice(0, 30_000), 7, 8] },
      ];
      for (const { inputIds, stream } of sent) {
        const generation = await client.generate({
          inputIds,
          sampling: sampling(16),
          onTokens: stream ? () => {} : undefined,
        });
        assert.ok(generation.outputIds.length > 0);
      }
      assert.deepEqual(engine.calls.map((call) => call.inputIds), sent.map((s) => s.expected));
    } finally {
      await client.close();
    }
  });
});
