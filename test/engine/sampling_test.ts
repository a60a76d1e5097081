import assert from "node:assert/strict";
import { samplingParams } from "../../lib/engine/sampling.ts";

const LIMITS = { promptLength: 1_000, contextLength: 32_768, stopIds: [151_645] };

Deno.test("samplingParams() sends the client's max_tokens as max_new_tokens when it fits", () => {
  assert.equal(samplingParams({ maxTokens: 4_096 }, LIMITS).max_new_tokens, 4_096);
});

Deno.test("samplingParams() clamps max_new_tokens to the context left", () => {
  const limits = { ...LIMITS, promptLength: 30_000 };
  assert.equal(samplingParams({ maxTokens: 4_096 }, limits).max_new_tokens, 2_768);
  assert.equal(samplingParams({ maxTokens: 2_768 }, limits).max_new_tokens, 2_768);
});

Deno.test("samplingParams() gives max_new_tokens 0, never negative, when the prompt fills the context", () => {
  assert.equal(
    samplingParams({ maxTokens: 10 }, { ...LIMITS, promptLength: 32_768 }).max_new_tokens,
    0,
  );
  assert.equal(
    samplingParams({ maxTokens: 10 }, { ...LIMITS, promptLength: 40_000 }).max_new_tokens,
    0,
  );
});

Deno.test("samplingParams() omits every optional field left undefined", () => {
  assert.deepEqual(samplingParams({ maxTokens: 64 }, LIMITS), {
    max_new_tokens: 64,
    stop_token_ids: [151_645],
    skip_special_tokens: false,
    no_stop_trim: true,
    spaces_between_special_tokens: false,
  });
  const json = JSON.parse(JSON.stringify(samplingParams({ maxTokens: 64 }, LIMITS)));
  for (const key of ["temperature", "top_p", "top_k", "stop"]) {
    assert.equal(key in json, false, key);
  }
});

Deno.test("samplingParams() maps temperature, top_p, top_k and stop to SGLang's names", () => {
  const params = samplingParams(
    { maxTokens: 64, temperature: 0.7, topP: 0.95, topK: 20, stop: ["</answer>", "\n\n"] },
    LIMITS,
  );
  assert.deepEqual(params, {
    max_new_tokens: 64,
    temperature: 0.7,
    top_p: 0.95,
    top_k: 20,
    stop: ["</answer>", "\n\n"],
    stop_token_ids: [151_645],
    skip_special_tokens: false,
    no_stop_trim: true,
    spaces_between_special_tokens: false,
  });
});

Deno.test("samplingParams() keeps a temperature of 0 and omits an empty stop list", () => {
  const params = samplingParams({ maxTokens: 8, temperature: 0, topK: -1, stop: [] }, LIMITS);
  assert.equal(params.temperature, 0);
  assert.equal(params.top_k, -1);
  assert.equal("stop" in params, false);
});

Deno.test("samplingParams() stops on the end-of-turn id it is given", () => {
  assert.deepEqual(
    samplingParams({ maxTokens: 8 }, { ...LIMITS, stopIds: [2, 7] }).stop_token_ids,
    [
      2,
      7,
    ],
  );
});

Deno.test("samplingParams() never sends vLLM or OpenAI parameter names", () => {
  const params = samplingParams(
    { maxTokens: 64, temperature: 1, topP: 1, topK: 5, stop: ["x"] },
    LIMITS,
  );
  const sglangKeys = new Set([
    "max_new_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stop",
    "stop_token_ids",
    "skip_special_tokens",
    "no_stop_trim",
    "spaces_between_special_tokens",
  ]);
  for (const key of Object.keys(params)) assert.ok(sglangKeys.has(key), `unexpected key ${key}`);
  for (const name of ["max_tokens", "maxTokens", "topP", "topK", "stop_sequences", "n"]) {
    assert.equal(name in params, false, name);
  }
});
