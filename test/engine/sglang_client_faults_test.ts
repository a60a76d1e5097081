import assert from "node:assert/strict";
import { EngineRejectedError, EngineUnavailableError, SglangClient } from "../../lib/engine/mod.ts";
import { type Script, scriptedLogprob } from "../../lib/scripted_engine/mod.ts";
import { qwen3 } from "../_gateway.ts";
import { PROMPT, RID, sampling, TRANSPORTS, withEngine, withServer } from "./_client.ts";

const ANSWER = "One two three four five six seven eight nine ten.";

/** Continues the scripted answer from wherever the prompt left it (prompt + partial output). */
function continuing(answer: number[]): Script {
  return (call) => ({ tokens: answer.slice(call.inputIds.length - PROMPT.length) });
}

function finished(outputIds: number[], logprobs: [number, number, null][]) {
  return Response.json({
    output_ids: outputIds,
    meta_info: {
      finish_reason: { type: "stop", matched: 151_645 },
      output_token_logprobs: logprobs,
      weight_version: "default",
    },
  });
}

for (const { label, httpWorker } of TRANSPORTS) {
  Deno.test(`SglangClient.generate() resumes an engine-side abort with prompt + partial output${label}`, async () => {
    const tokenizer = await qwen3();
    const answer = tokenizer.encode(ANSWER);
    await withEngine({ httpWorker, script: continuing(answer) }, async ({ engine, client }) => {
      engine.fault({ kind: "abort", after: 4, weightVersion: "v2" });
      const generation = await client.generate({ inputIds: PROMPT, sampling: sampling(256) });
      assert.equal(engine.calls.length, 2);
      const [first, second] = engine.calls;
      assert.deepEqual(first.output, answer.slice(0, 4));
      assert.deepEqual(second.inputIds, [...PROMPT, ...answer.slice(0, 4)]);
      assert.equal(second.sampling.max_new_tokens, 252);
      assert.match(second.rid, RID);
      assert.notEqual(second.rid, first.rid);
      assert.equal(generation.rid, first.rid);
      const full = [...answer, tokenizer.eosId];
      assert.deepEqual(generation.outputIds, full);
      assert.deepEqual(generation.logprobs, [
        ...full.slice(0, 4).map((t, i) => scriptedLogprob(t, i)),
        ...full.slice(4).map((t, i) => scriptedLogprob(t, i)),
      ]);
      assert.deepEqual(generation.finish, { type: "stop", matched: tokenizer.eosId });
      assert.equal(generation.aborts, 1);
      assert.deepEqual(generation.weightVersions, ["default", "v2"]);
    });
  });

  Deno.test(`SglangClient.generate() records no weight version for an abort that produced no tokens${label}`, async () => {
    const tokenizer = await qwen3();
    const answer = tokenizer.encode(ANSWER);
    await withEngine({ httpWorker, script: continuing(answer) }, async ({ engine, client }) => {
      engine.fault({ kind: "abort", after: 0, weightVersion: "v2" });
      const generation = await client.generate({ inputIds: PROMPT, sampling: sampling(256) });
      assert.deepEqual(engine.calls[1].inputIds, PROMPT);
      assert.deepEqual(generation.outputIds, [...answer, tokenizer.eosId]);
      assert.equal(generation.aborts, 1);
      assert.deepEqual(generation.weightVersions, ["v2"]);
    });
  });

  Deno.test(`SglangClient.generate() resumes several aborts and keeps max_new_tokens in total${label}`, async () => {
    const tokenizer = await qwen3();
    const answer = tokenizer.encode(ANSWER);
    await withEngine({ httpWorker, script: continuing(answer) }, async ({ engine, client }) => {
      engine.fault({ kind: "abort", after: 2 });
      engine.fault({ kind: "abort", after: 3 });
      const generation = await client.generate({ inputIds: PROMPT, sampling: sampling(8) });
      assert.deepEqual(engine.calls.map((c) => c.sampling.max_new_tokens), [8, 6, 3]);
      assert.deepEqual(generation.outputIds, answer.slice(0, 8));
      assert.deepEqual(generation.finish, { type: "length" });
      assert.equal(generation.aborts, 2);
    });
  });

  Deno.test(`SglangClient.generate() throws EngineUnavailableError past maxResumes aborts${label}`, async () => {
    await withEngine(
      { httpWorker, script: ["word ".repeat(50)], maxResumes: 1 },
      async ({ engine, client }) => {
        engine.fault({ kind: "abort", after: 2 });
        engine.fault({ kind: "abort", after: 2 });
        await assert.rejects(
          client.generate({ inputIds: PROMPT, sampling: sampling(256) }),
          (error) =>
            error instanceof EngineUnavailableError &&
            /aborted the generation 2 times/.test(error.message),
        );
        assert.equal(engine.calls.length, 2);
      },
    );
  });

  Deno.test(`SglangClient.generate() throws EngineUnavailableError when nothing listens at the URL${label}`, async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const url = `http://127.0.0.1:${listener.addr.port}`;
    listener.close();
    const client = new SglangClient(url, { httpWorker, connections: 1, timeoutMs: 5_000 });
    try {
      await assert.rejects(
        client.generate({ inputIds: PROMPT, sampling: sampling() }),
        (error) => error instanceof EngineUnavailableError && error.message.includes(url),
      );
    } finally {
      await client.close();
    }
  });

  Deno.test(`SglangClient.generate() throws EngineRejectedError when logprobs do not match output_ids${label}`, async () => {
    await withServer(() => finished([7, 8], [[-0.5, 7, null]]), async (client) => {
      await assert.rejects(
        client.generate({ inputIds: PROMPT, sampling: sampling() }),
        EngineRejectedError,
      );
    }, httpWorker);
    await withServer(() => finished([7, 8], [[-0.5, 7, null], [-0.5, 9, null]]), async (client) => {
      await assert.rejects(
        client.generate({ inputIds: PROMPT, sampling: sampling() }),
        /output_token_logprobs that do not match output_ids/,
      );
    }, httpWorker);
  });

  Deno.test(`SglangClient.generate() treats HTTP 429 and 500 as EngineUnavailableError${label}`, async () => {
    for (const status of [429, 500]) {
      await withServer(() => new Response("busy", { status }), async (client) => {
        await assert.rejects(
          client.generate({ inputIds: PROMPT, sampling: sampling() }),
          (error) =>
            error instanceof EngineUnavailableError && error.message.includes(String(status)),
        );
      }, httpWorker);
    }
  });

  Deno.test(`SglangClient.generate() reads the message of SGLang's validation error body${label}`, async () => {
    const body = {
      object: "error",
      message: "max_new_tokens must be at least 0",
      type: "Bad Request",
      param: null,
      code: 400,
    };
    await withServer(() => Response.json(body, { status: 400 }), async (client) => {
      await assert.rejects(
        client.generate({ inputIds: PROMPT, sampling: sampling() }),
        (error) =>
          error instanceof EngineRejectedError &&
          error.message.endsWith("max_new_tokens must be at least 0"),
      );
    }, httpWorker);
  });

  Deno.test(`SglangClient.generate() sends a request again, once, when its connection closes before any answer${label}`, async () => {
    // A raw HTTP server whose first connection reads the request and closes (as a restarted engine
    // leaves a kept-alive connection), and whose second answers.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const requests: number[] = [];
    const serving = (async () => {
      let n = 0;
      for await (const conn of listener) {
        const index = n++;
        (async () => {
          const buffer = new Uint8Array(65_536);
          let text = "";
          while (!text.includes("\r\n\r\n") || !text.endsWith("}")) {
            const read = await conn.read(buffer);
            if (read === null) break;
            text += new TextDecoder().decode(buffer.subarray(0, read));
          }
          requests.push(index);
          if (index === 0) return conn.close();
          const body = JSON.stringify({
            output_ids: [9707],
            meta_info: {
              finish_reason: { type: "stop", matched: 9707 },
              output_token_logprobs: [[-0.25, 9707, null]],
              weight_version: "default",
            },
          });
          await conn.write(new TextEncoder().encode(
            `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
          ));
          conn.close();
        })();
      }
    })();
    const client = new SglangClient(`http://127.0.0.1:${listener.addr.port}`, {
      httpWorker,
      connections: 4,
      timeoutMs: 10_000,
    });
    try {
      const generation = await client.generate({ inputIds: PROMPT, sampling: sampling(8) });
      assert.deepEqual(generation.outputIds, [9707]);
      assert.deepEqual(requests, [0, 1]);
    } finally {
      await client.close();
      listener.close();
      await serving.catch(() => {});
    }
  });
}
