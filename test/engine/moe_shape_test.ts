import assert from "node:assert/strict";
import { MoeConfigError, moeShape } from "../../lib/engine/mod.ts";

Deno.test("moeShape() reads each family's keys and dense layers", () => {
  // Qwen3-30B-A3B
  assert.deepEqual(
    moeShape({
      num_hidden_layers: 48,
      num_experts: 128,
      num_experts_per_tok: 8,
      decoder_sparse_step: 1,
      mlp_only_layers: [],
    }),
    { layers: 48, topK: 8, experts: 128, denseLayers: [] },
  );
  // Qwen3-MoE with a sparse step of 2 and one layer kept dense.
  assert.deepEqual(
    moeShape({
      num_hidden_layers: 6,
      num_experts: 8,
      num_experts_per_tok: 2,
      decoder_sparse_step: 2,
      mlp_only_layers: [3],
    }).denseLayers,
    [0, 2, 3, 4],
  );
  // Kimi K2 (DeepSeek-V3's architecture): the first layer dense.
  assert.deepEqual(
    moeShape({
      num_hidden_layers: 61,
      n_routed_experts: 384,
      num_experts_per_tok: 8,
      first_k_dense_replace: 1,
      moe_layer_freq: 1,
    }),
    { layers: 61, topK: 8, experts: 384, denseLayers: [0] },
  );
  // gpt-oss-120b
  assert.deepEqual(
    moeShape({ num_hidden_layers: 36, num_local_experts: 128, experts_per_token: 4 }),
    { layers: 36, topK: 4, experts: 128, denseLayers: [] },
  );
  // A vision-language model's text model.
  assert.deepEqual(
    moeShape({
      architectures: ["Qwen3VLMoeForConditionalGeneration"],
      text_config: { num_hidden_layers: 4, num_experts: 16, num_experts_per_tok: 2 },
    }),
    { layers: 4, topK: 2, experts: 16, denseLayers: [] },
  );
});

Deno.test("moeShape() refuses a config of no experts, naming the key", () => {
  const refused = (config: unknown, message: RegExp) =>
    assert.throws(
      () => moeShape(config),
      (e) => e instanceof MoeConfigError && message.test(e.message),
    );
  refused([], /not a JSON object/);
  refused({ num_hidden_layers: 36 }, /no num_experts or n_routed_experts or num_local_experts/);
  refused({ num_experts: 8, num_experts_per_tok: 2 }, /no num_hidden_layers/);
  refused(
    { num_hidden_layers: 4, num_experts: 8, num_experts_per_tok: "2" },
    /num_experts_per_tok is "2", not an integer/,
  );
  refused(
    { num_hidden_layers: 4, num_experts: 2, num_experts_per_tok: 4 },
    /routes 4 experts a token of 2/,
  );
  refused(
    { num_hidden_layers: 2, n_routed_experts: 8, num_experts_per_tok: 2, first_k_dense_replace: 2 },
    /no MoE layer/,
  );
});
