/**
 * The engine dialects: the registry and the SGLang dialect's client and controller, made from
 * its record and driven like the gateway drives them.
 */
import assert from "node:assert/strict";
import {
  ENGINE_DIALECTS,
  EngineControl,
  type EngineDialect,
  engineDialect,
  samplingParams,
  SGLANG,
  SglangClient,
  VLLM,
} from "../../lib/engine/mod.ts";
import { startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { qwen3 } from "../_gateway.ts";

Deno.test("the dialects are found by name, SGLang first; a list given is searched instead", () => {
  assert.deepEqual(ENGINE_DIALECTS.map((dialect) => dialect.name), ["sglang", "vllm"]);
  assert.equal(engineDialect("sglang"), SGLANG);
  assert.equal(engineDialect("vllm"), VLLM);
  assert.equal(engineDialect("tgi"), undefined);
  assert.deepEqual(SGLANG.pauseModes, ["abort", "retract", "in_place"]);
  assert.deepEqual(VLLM.pauseModes, ["abort", "wait", "keep"]);
  const other: EngineDialect = { ...SGLANG, name: "other", title: "Other" };
  assert.equal(engineDialect("other", [...ENGINE_DIALECTS, other]), other);
  assert.equal(engineDialect("other"), undefined);
});

Deno.test("the SGLang dialect makes a client that samples and a controller that reaches the worker", async () => {
  const tokenizer = await qwen3();
  const scripted = await startScriptedEngine({ tokenizer });
  const engine = SGLANG.connect(scripted.url, { connections: 4, timeoutMs: 10_000 });
  try {
    assert.ok(engine instanceof SglangClient);
    const inputIds = tokenizer.encode("Hello");
    const sampling = samplingParams({ maxTokens: 8 }, {
      promptLength: inputIds.length,
      contextLength: 4096,
      stopIds: [],
    });
    const generation = await engine.generate({ inputIds, sampling });
    assert.equal(generation.logprobs.length, generation.outputIds.length);
    assert.deepEqual(generation.weightVersions, ["default"]);

    const control = SGLANG.control(scripted.url, { workers: null, timeoutMs: 10_000 });
    assert.ok(control instanceof EngineControl);
    assert.deepEqual(await control.workers(), [scripted.url]);
    await control.setWeightVersion("7", false);
    assert.deepEqual(await control.weightVersions(), [{ url: scripted.url, version: "7" }]);
  } finally {
    await engine.close();
    await scripted.close();
  }
});
