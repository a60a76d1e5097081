/**
 * The vLLM dialect's client against the scripted engine speaking vLLM (and, for what only other
 * servers do, a stand-in of a few lines): the request as vLLM reads it, the same tokens and
 * logprobs streamed or whole, top logprobs as SGLang's, engine aborts resumed, versions taken
 * from the spans, errors mapped to the retry statuses.
 */
import assert from "node:assert/strict";
import {
  EngineControl,
  EngineRejectedError,
  EngineUnavailableError,
  samplingParams,
  VLLM_CONTROL,
  VllmClient,
  vllmSampling,
} from "../../lib/engine/mod.ts";
import {
  scriptedLogprob,
  scriptedTopLogprobs,
  startScriptedEngine,
} from "../../lib/scripted_engine/mod.ts";
import { qwen3 } from "../_gateway.ts";
import { PROMPT, RID, sampling, until } from "./_client.ts";

const TEXT = "Listing the files first, then reading the one that failed.";

/** A vLLM-speaking scripted engine and a client of it, for one test. */
async function withVllm(
  options: {
    script?: string[];
    latencyMs?: number;
    endpoint?: string;
    vllmEndpoints?: "both" | "completions";
  },
  run: (ctx: {
    engine: Awaited<ReturnType<typeof startScriptedEngine>>;
    client: VllmClient;
    tokens: number[];
  }) => Promise<void>,
) {
  const tokenizer = await qwen3();
  const engine = await startScriptedEngine({
    tokenizer,
    script: options.script ?? (() => TEXT),
    latencyMs: options.latencyMs,
    dialect: "vllm",
    vllmEndpoints: options.vllmEndpoints,
  });
  const client = new VllmClient(engine.url, {
    connections: 4,
    timeoutMs: 30_000,
    endpoint: options.endpoint,
  });
  try {
    await run({ engine, client, tokens: [...tokenizer.encode(TEXT), tokenizer.eosId] });
  } finally {
    await client.close();
    await engine.close();
  }
}

Deno.test("the request is vLLM's: token_ids, its SamplingParams, special tokens kept, one more top logprob", () => {
  const params = samplingParams({ maxTokens: 64, temperature: 0.7, topP: 0.9, seed: 5 }, {
    promptLength: 10,
    contextLength: 100,
    stopIds: [151_645],
  });
  assert.deepEqual(vllmSampling(params, 64, 3), {
    max_tokens: 64,
    temperature: 0.7,
    top_p: 0.9,
    seed: 5,
    stop_token_ids: [151_645],
    logprobs: 4,
    skip_special_tokens: false,
    spaces_between_special_tokens: false,
    include_stop_str_in_output: true,
    detokenize: false,
  });
  const stops = samplingParams({ maxTokens: 8, stop: ["\n\n"] }, {
    promptLength: 1,
    contextLength: 100,
    stopIds: [],
  });
  const withStops = vllmSampling(stops, 8, 0);
  assert.deepEqual([withStops.stop, withStops.detokenize, withStops.logprobs], [
    ["\n\n"],
    true,
    0,
  ]);
});

for (const endpoint of ["generate", "completions"]) {
  Deno.test(`VllmClient streamed and whole sample the same tokens, logprobs and top logprobs (${endpoint})`, async () => {
    await withVllm({ endpoint }, async ({ engine, client, tokens }) => {
      const whole = await client.generate({
        inputIds: PROMPT,
        sampling: sampling(),
        topLogprobs: 2,
      });
      const told: number[] = [];
      const streamed = await client.generate({
        inputIds: PROMPT,
        sampling: sampling(),
        topLogprobs: 2,
        onTokens: (sampled) => told.push(...sampled.ids),
      });
      for (const generation of [whole, streamed]) {
        assert.deepEqual(generation.outputIds, tokens);
        assert.deepEqual(generation.logprobs, tokens.map((t, i) => scriptedLogprob(t, i)));
        assert.deepEqual(
          generation.topLogprobs,
          tokens.map((t, i) => scriptedTopLogprobs(t, i, 2).map(([lp, id]) => [id, lp])),
        );
        assert.deepEqual(generation.finish, { type: "stop", matched: tokens.at(-1) });
        assert.deepEqual(generation.versionSpans, [
          { version: "default", start: 0, end: tokens.length },
        ]);
        assert.match(generation.rid, RID);
      }
      assert.deepEqual(told, tokens);
      const [first, second] = engine.calls;
      assert.deepEqual(first.inputIds, PROMPT);
      assert.equal(first.sampling.max_tokens, 256);
      // One more than asked where vLLM lists the sampled token first; completions list it beside.
      assert.equal(first.sampling.logprobs, endpoint === "generate" ? 3 : 2);
      assert.equal(first.rid, whole.rid);
      assert.equal(second.rid, streamed.rid);
    });
  });
}

Deno.test("VllmClient resumes a generation a pause aborted, under the version set meanwhile", async () => {
  await withVllm({ latencyMs: 5 }, async ({ engine, client, tokens }) => {
    const control = new EngineControl(engine.url, { workers: null, timeoutMs: 5000 }, VLLM_CONTROL);
    const generation = client.generate({ inputIds: PROMPT, sampling: sampling(), onTokens() {} });
    await until(() => (engine.calls[0]?.produced ?? 0) > 3);
    await control.pause("abort");
    const cut = engine.calls[0].output!.length;
    await control.setWeightVersion("7", false);
    await control.continue();
    const done = await generation;
    assert.deepEqual(engine.pauses, ["abort"]);
    assert.equal(done.aborts, 1);
    assert.deepEqual(engine.calls[1].inputIds, [...PROMPT, ...engine.calls[0].output!]);
    // The resumed call continues the scripted reply from where the prompt leaves it.
    assert.equal(done.outputIds.length, cut + engine.calls[1].output!.length);
    assert.deepEqual(done.versionSpans, [
      { version: "default", start: 0, end: cut },
      { version: "7", start: cut, end: done.outputIds.length },
    ]);
    assert.deepEqual(await control.weightVersions(), [{ url: engine.url, version: "7" }]);
    assert.ok(tokens.length > 0);
  });
});

/** A stand-in vLLM answering each generate call with `answer`, for one test. */
async function withStandIn(
  answer: (body: Record<string, unknown>) => Response,
  run: (client: VllmClient, bodies: Record<string, unknown>[]) => Promise<void>,
) {
  const bodies: Record<string, unknown>[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    if (new URL(req.url).pathname !== "/inference/v1/generate") {
      await req.body?.cancel();
      return new Response(null, { status: 404 });
    }
    const body = await req.json();
    bodies.push(body);
    return answer(body);
  });
  const client = new VllmClient(`http://127.0.0.1:${server.addr.port}`, {
    connections: 2,
    timeoutMs: 5000,
  });
  try {
    await run(client, bodies);
  } finally {
    await client.close();
    await server.shutdown();
  }
}

const sse = (events: unknown[]) =>
  new Response(
    events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join("") + "data: [DONE]\n\n",
    { headers: { "content-type": "text/event-stream" } },
  );
const choice = (ids: number[], finish: string | null) => ({
  choices: [{
    index: 0,
    token_ids: ids,
    finish_reason: finish,
    logprobs: { content: ids.map((id) => ({ token_id: id, logprob: -0.5 })) },
  }],
});

Deno.test("a stream an older vLLM ends without a finish (an abort that sampled nothing new) is resumed", async () => {
  let calls = 0;
  await withStandIn(
    () => ++calls === 1 ? sse([choice([11, 12], null)]) : sse([choice([13], "length")]),
    async (client, bodies) => {
      const done = await client.generate({
        inputIds: [1, 2],
        sampling: sampling(3),
        onTokens() {},
      });
      assert.deepEqual(done.outputIds, [11, 12, 13]);
      assert.equal(done.aborts, 1);
      assert.deepEqual(done.finish, { type: "length" });
      assert.deepEqual(bodies.map((body) => body.token_ids), [[1, 2], [1, 2, 11, 12]]);
      assert.deepEqual(
        bodies.map((body) => (body.sampling_params as { max_tokens: number }).max_tokens),
        [3, 1],
      );
    },
  );
});

Deno.test("vLLM's errors map to the retry statuses: 4xx rejected with its message, 5xx unavailable", async () => {
  for (
    const [status, kind, message] of [
      [400, EngineRejectedError, "Engine rejected the request: The decoder prompt is too long"],
      [503, EngineUnavailableError, "Engine answered HTTP 503"],
    ] as const
  ) {
    await withStandIn(
      () =>
        Response.json({
          error: {
            message: "The decoder prompt is too long",
            type: "BadRequestError",
            code: status,
          },
        }, { status }),
      async (client) => {
        await assert.rejects(
          client.generate({ inputIds: [1], sampling: sampling(4) }),
          (error: Error) => error instanceof kind && error.message.startsWith(message),
        );
      },
    );
  }
  await withStandIn(
    () =>
      Response.json({ choices: [{ token_ids: [5, 6], finish_reason: "stop", logprobs: null }] }),
    async (client) => {
      await assert.rejects(
        client.generate({ inputIds: [1], sampling: sampling(4) }),
        (error: Error) =>
          error instanceof EngineRejectedError && /logprobs that do not match/.test(error.message),
      );
    },
  );
});

Deno.test("with VLLM_ENDPOINT=auto a server older than 0.20 is found out once and served over /v1/completions", async () => {
  await withVllm({ vllmEndpoints: "completions" }, async ({ engine, client, tokens }) => {
    assert.equal(client.endpoint, "auto");
    const first = await client.generate({ inputIds: PROMPT, sampling: sampling() });
    assert.equal(client.endpoint, "completions");
    const second = await client.generate({ inputIds: PROMPT, sampling: sampling(), onTokens() {} });
    for (const generation of [first, second]) assert.deepEqual(generation.outputIds, tokens);
    // The 404 left no call on the engine: only the two completions.
    assert.equal(engine.calls.length, 2);
    assert.deepEqual(engine.calls.map((call) => call.sampling.return_token_ids), [true, true]);
  });
  await withVllm(
    { vllmEndpoints: "completions", endpoint: "generate" },
    async ({ client }) => {
      await assert.rejects(
        client.generate({ inputIds: PROMPT, sampling: sampling() }),
        (error: Error) =>
          error instanceof EngineRejectedError && /VLLM_ENDPOINT=completions/.test(error.message),
      );
    },
  );
});

Deno.test("a stop string ends a vLLM generation with the string kept and named, on both endpoints", async () => {
  for (const endpoint of ["generate", "completions"]) {
    await withVllm(
      { endpoint, script: ["Step one.\n\nStep two."] },
      async ({ engine, client }) => {
        const generation = await client.generate({
          inputIds: PROMPT,
          sampling: sampling(64, ["\n\n"]),
          onTokens() {},
        });
        const tokenizer = await qwen3();
        assert.equal(tokenizer.decode(generation.outputIds), "Step one.\n\n");
        assert.deepEqual(generation.finish, { type: "stop", matched: "\n\n" });
        // Text is decoded on the engine only because a stop string needs it.
        const sent = engine.calls[0].sampling;
        assert.deepEqual(
          endpoint === "generate" ? [sent.stop, sent.detokenize] : [sent.stop],
          endpoint === "generate" ? [["\n\n"], true] : [["\n\n"]],
        );
      },
    );
  }
});
