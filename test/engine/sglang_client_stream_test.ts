/**
 * The engine streamed: tokens reported as sampled, the generation identical to a non-streamed
 * one, both of SGLang's stream forms, its abort quirk and mid-stream failures, resumes, and a
 * caller that leaves.
 */
import assert from "node:assert/strict";
import {
  EngineRejectedError,
  EngineUnavailableError,
  type SampledTokens,
} from "../../lib/engine/mod.ts";
import { sseData } from "../../lib/engine/stream_chunks.ts";
import { type Script, scriptedLogprob } from "../../lib/scripted_engine/mod.ts";
import { qwen3 } from "../_gateway.ts";
import { PROMPT, sampling, TRANSPORTS, until, withEngine, withServer } from "./_client.ts";

const ANSWER = "One two three four five six seven eight nine ten. Ünïcödé 你好 🎉";

/** Continues the scripted answer from wherever the prompt left it (prompt + partial output). */
function continuing(answer: number[]): Script {
  return (call) => ({ tokens: answer.slice(call.inputIds.length - PROMPT.length) });
}

for (const { label, httpWorker } of TRANSPORTS) {
  for (const incrementalStreaming of [false, true]) {
    const form = incrementalStreaming ? "incremental" : "cumulative";
    Deno.test(`SglangClient.generate() streams ${form} chunks: every token reported once, in order, the generation as unstreamed${label}`, async () => {
      await withEngine(
        { script: [ANSWER, ANSWER], incrementalStreaming, httpWorker },
        async ({ engine, client, tokenizer }) => {
          const plain = await client.generate({ inputIds: PROMPT, sampling: sampling(64) });
          const reports: SampledTokens[] = [];
          const streamed = await client.generate({
            inputIds: PROMPT,
            sampling: sampling(64),
            onTokens: (tokens) => reports.push(tokens),
          });
          const ids = [...tokenizer.encode(ANSWER), tokenizer.eosId];
          assert.deepEqual(streamed.outputIds, ids);
          assert.deepEqual(plain.outputIds, ids);
          assert.deepEqual(streamed.logprobs, plain.logprobs);
          assert.deepEqual(streamed.finish, plain.finish);
          assert.deepEqual(streamed.versionSpans, [{
            version: "default",
            start: 0,
            end: ids.length,
          }]);
          assert.deepEqual(streamed.versionSpans, plain.versionSpans);
          assert.equal(reports.length, ids.length, "a report per chunk, a chunk per token");
          assert.deepEqual(reports.flatMap((report) => report.ids), ids);
          assert.deepEqual(reports.flatMap((report) => report.logprobs), plain.logprobs);
          assert.deepEqual(engine.calls.map((call) => call.output), [ids, ids]);
        },
      );
    });
  }

  Deno.test(`SglangClient.generate() asks the engine to stream only when told of tokens${label}`, async () => {
    const bodies: Record<string, unknown>[] = [];
    await withServer(async (request) => {
      bodies.push(await request.json());
      return bodies.at(-1)!.stream
        ? sse([chunk([7, 2], 2, "stop")])
        : Response.json(answerOf([7, 2]));
    }, async (client) => {
      await client.generate({ inputIds: PROMPT, sampling: sampling(8) });
      await client.generate({ inputIds: PROMPT, sampling: sampling(8), onTokens: () => {} });
      assert.deepEqual(bodies.map((body) => body.stream), [false, true]);
    }, httpWorker);
  });

  Deno.test(`SglangClient.generate() resumes a stream aborted by a weight update: the report goes on, versions by span${label}`, async () => {
    const tokenizer = await qwen3();
    const answer = tokenizer.encode(ANSWER);
    await withEngine({ httpWorker, script: continuing(answer) }, async ({ engine, client }) => {
      engine.fault({ kind: "abort", after: 4, weightVersion: "v2" });
      const reported: number[] = [];
      const versions: string[] = [];
      const generation = await client.generate({
        inputIds: PROMPT,
        sampling: sampling(256),
        onTokens: (tokens) => {
          reported.push(...tokens.ids);
          versions.push(tokens.weightVersion);
        },
      });
      const full = [...answer, tokenizer.eosId];
      assert.deepEqual(reported, full);
      assert.deepEqual(generation.outputIds, full);
      assert.deepEqual(engine.calls[1].inputIds, [...PROMPT, ...answer.slice(0, 4)]);
      assert.equal(engine.calls[1].sampling.max_new_tokens, 252);
      assert.deepEqual(generation.versionSpans, [
        { version: "default", start: 0, end: 4 },
        { version: "v2", start: 4, end: full.length },
      ]);
      assert.deepEqual(generation.weightVersions, ["default", "v2"]);
      assert.deepEqual([...new Set(versions)], ["default", "v2"]);
      assert.deepEqual(generation.logprobs, [
        ...full.slice(0, 4).map((t, i) => scriptedLogprob(t, i)),
        ...full.slice(4).map((t, i) => scriptedLogprob(t, i)),
      ]);
    });
  });

  Deno.test(`SglangClient.generate() takes nothing from a waiting-queue abort chunk's stray ids${label}`, async () => {
    let calls = 0;
    await withServer(async (request) => {
      await request.body?.cancel();
      calls++;
      if (calls === 1) {
        // Two tokens streamed cumulatively, then the abort chunk carrying only [last_id].
        return sse([chunk([5], 1), chunk([5, 6], 2), chunk([6], 2, "abort")]);
      }
      return sse([chunk([8], 1), chunk([8, 2], 2, "stop")]);
    }, async (client) => {
      const reported: number[] = [];
      const generation = await client.generate({
        inputIds: PROMPT,
        sampling: sampling(16),
        onTokens: (tokens) => reported.push(...tokens.ids),
      });
      assert.deepEqual(generation.outputIds, [5, 6, 8, 2]);
      assert.deepEqual(reported, [5, 6, 8, 2]);
      assert.equal(generation.aborts, 1);
    }, httpWorker);
  });

  Deno.test(`SglangClient.generate() fails a stream whose chunks do not add up, or which reports an error${label}`, async () => {
    const streams = [
      sse([chunk([5], 1), chunk([5, 6, 7], 2, "stop")]),
      sse([chunk([5], 1)], [`data: {"error":{"message":"bad sampling"}}`]),
    ];
    await withServer(async (request) => {
      await request.body?.cancel();
      return streams.shift()!;
    }, async (client) => {
      const streamed = () =>
        client.generate({ inputIds: PROMPT, sampling: sampling(16), onTokens: () => {} });
      await assert.rejects(
        streamed(),
        (error) => error instanceof EngineRejectedError && /3 output_ids for 2/.test(error.message),
      );
      await assert.rejects(
        streamed(),
        (error) => error instanceof EngineRejectedError && /bad sampling/.test(error.message),
      );
    }, httpWorker);
  });

  Deno.test(`SglangClient.generate() finds an engine unavailable when its stream ends unfinished or drops${label}`, async () => {
    await withServer(async (request) => {
      await request.body?.cancel();
      return sse([chunk([5], 1)], ["data: [DONE]"]);
    }, async (client) => {
      await assert.rejects(
        client.generate({ inputIds: PROMPT, sampling: sampling(16), onTokens: () => {} }),
        (error) => error instanceof EngineUnavailableError && /ended before/.test(error.message),
      );
    }, httpWorker);
    await withEngine(
      { httpWorker, script: ["word ".repeat(40)], latencyMs: 2 },
      async ({ engine, client }) => {
        engine.fault({ kind: "drop", afterMs: 20 });
        const reported: number[] = [];
        await assert.rejects(
          client.generate({
            inputIds: PROMPT,
            sampling: sampling(64),
            onTokens: (tokens) => reported.push(...tokens.ids),
          }),
          EngineUnavailableError,
        );
        assert.ok(reported.length > 0, "tokens streamed before the drop");
      },
    );
  });

  Deno.test(`SglangClient.generate() aborts a stream when its caller leaves: the engine is told and stops${label}`, async () => {
    await withEngine(
      { httpWorker, script: ["word ".repeat(400)], latencyMs: 5 },
      async ({ engine, client }) => {
        const caller = new AbortController();
        let reported = 0;
        const generation = client.generate({
          inputIds: PROMPT,
          sampling: sampling(1_000),
          signal: caller.signal,
          onTokens: (tokens) => {
            reported += tokens.ids.length;
            if (reported >= 3) caller.abort(new Error("client left"));
          },
        });
        await assert.rejects(generation, /client left/);
        // The engine is told by /abort_request and by the closed connection, in either order.
        await until(() =>
          engine.calls[0].finishedAt !== undefined && engine.abortRequests.length > 0
        );
        assert.deepEqual(engine.abortRequests, [engine.calls[0].rid]);
        assert.ok(engine.calls[0].output!.length < 400, "the call stopped early");
      },
    );
  });

  Deno.test(`SglangClient.generate() splits an unstreamed answer by the weight_versions it reports${label}`, async () => {
    await withServer(async (request) => {
      await request.body?.cancel();
      return Response.json({
        ...answerOf([5, 6, 7, 2]),
        meta_info: {
          ...answerOf([5, 6, 7, 2]).meta_info,
          weight_version: "v2",
          weight_versions: [{ version: "v1", start: 0, end: 1 }, {
            version: "v2",
            start: 1,
            end: 4,
          }],
        },
      });
    }, async (client) => {
      const generation = await client.generate({ inputIds: PROMPT, sampling: sampling(16) });
      assert.deepEqual(generation.versionSpans, [
        { version: "v1", start: 0, end: 1 },
        { version: "v2", start: 1, end: 4 },
      ]);
    }, httpWorker);
  });
}

Deno.test("sseData() yields each event's data whatever the byte cuts: split UTF-8, CRLF, comments", async () => {
  const text = 'data: {"a":"é你"}\n\n: keep-alive\n\ndata: x\r\n\r\ndata: [DONE]\n\n';
  const bytes = new TextEncoder().encode(text.replaceAll("\r\n\r\n", "\n\n"));
  for (let cut = 1; cut < bytes.length; cut++) {
    const pieces = [bytes.slice(0, cut), bytes.slice(cut)];
    const data: string[] = [];
    for await (const item of sseData(iterate(pieces))) data.push(item);
    assert.deepEqual(data, ['{"a":"é你"}', "x", "[DONE]"], `cut at ${cut}`);
  }
  const one: string[] = [];
  for await (const item of sseData(iterate([new TextEncoder().encode("data: a\r\n\n")]))) {
    one.push(item);
  }
  assert.deepEqual(one, ["a"]);
});

async function* iterate(pieces: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const piece of pieces) yield piece;
}

/** A streamed chunk holding `ids` (the cumulative or incremental ones) of `total` tokens. */
function chunk(ids: number[], total: number, finish?: "stop" | "abort") {
  return {
    output_ids: ids,
    meta_info: {
      completion_tokens: total,
      finish_reason: finish === undefined
        ? null
        : finish === "stop"
        ? { type: "stop", matched: ids.at(-1) }
        : { type: "abort", message: "Abort in waiting queue" },
      output_token_logprobs: finish === "abort" ? [] : ids.map((id) => [-0.5, id, null]),
      weight_version: "default",
    },
  };
}

function answerOf(ids: number[]) {
  return {
    output_ids: ids,
    meta_info: {
      finish_reason: { type: "stop", matched: ids.at(-1) },
      output_token_logprobs: ids.map((id) => [-0.5, id, null]),
      weight_version: "default",
    },
  };
}

/** An SSE response of `chunks`, then `tail` events (by default `[DONE]`). */
function sse(chunks: unknown[], tail = ["data: [DONE]"]): Response {
  const text = [...chunks.map((c) => `data: ${JSON.stringify(c)}`), ...tail].join("\n\n") + "\n\n";
  return new Response(text, { headers: { "content-type": "text/event-stream" } });
}
