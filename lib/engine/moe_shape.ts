/**
 * The served model's mixture-of-experts shape, read from its Hugging Face `config.json`: how many
 * decoder layers a routed-experts row covers, how many experts each token is routed to, how many
 * experts a layer has, and which layers have none. The families' key names differ:
 *
 * | family | experts | per token | dense layers |
 * | --- | --- | --- | --- |
 * | Qwen3-MoE (`Qwen3MoeForCausalLM`) | `num_experts` | `num_experts_per_tok` | `mlp_only_layers`, and every layer `i` with `(i + 1) % decoder_sparse_step != 0` |
 * | DeepSeek-V3, Kimi K2, GLM-4.5 | `n_routed_experts` | `num_experts_per_tok` | layers below `first_k_dense_replace`, and those off `moe_layer_freq` |
 * | gpt-oss, Mixtral | `num_local_experts` | `num_experts_per_tok` (gpt-oss: `experts_per_token`) | none |
 *
 * A vision-language model keeps these under `text_config`.
 *
 * @module
 */
import type { MoeShape } from "./routed_experts.ts";

/** A `config.json` that does not describe a mixture of experts. */
export class MoeConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MoeConfigError";
  }
}

/**
 * The model's MoE shape from its parsed `config.json`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { moeShape } from "./moe_shape.ts";
 * // Qwen3-30B-A3B
 * const shape = moeShape({
 *   num_hidden_layers: 48, num_experts: 128, num_experts_per_tok: 8,
 *   decoder_sparse_step: 1, mlp_only_layers: [],
 * });
 * assert.deepEqual(shape, { layers: 48, topK: 8, experts: 128, denseLayers: [] });
 * ```
 * @throws {MoeConfigError} naming the key that is missing or wrong.
 */
export function moeShape(config: unknown): MoeShape {
  if (!isObject(config)) throw new MoeConfigError("config.json is not a JSON object");
  const text = isObject(config.text_config) ? { ...config, ...config.text_config } : config;
  const layers = count(text, ["num_hidden_layers"]);
  const experts = count(text, ["num_experts", "n_routed_experts", "num_local_experts"]);
  const topK = count(text, ["num_experts_per_tok", "experts_per_token"]);
  if (topK > experts) {
    throw new MoeConfigError(`config.json routes ${topK} experts a token of ${experts}`);
  }
  const dense: number[] = [];
  const mlpOnly = Array.isArray(text.mlp_only_layers) ? text.mlp_only_layers : [];
  const sparseStep = optionalCount(text, "decoder_sparse_step") ?? 1;
  const firstDense = optionalCount(text, "first_k_dense_replace", 0) ?? 0;
  const frequency = optionalCount(text, "moe_layer_freq") ?? 1;
  for (let layer = 0; layer < layers; layer++) {
    const isDense = mlpOnly.includes(layer) || (layer + 1) % sparseStep !== 0 ||
      layer < firstDense || layer % frequency !== 0;
    if (isDense) dense.push(layer);
  }
  if (dense.length === layers) throw new MoeConfigError("config.json has no MoE layer");
  return { layers, topK, experts, denseLayers: dense };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The first of `names` the config holds, as a positive integer. */
function count(config: Record<string, unknown>, names: readonly string[]): number {
  for (const name of names) {
    const value = optionalCount(config, name);
    if (value !== null) return value;
  }
  throw new MoeConfigError(`config.json has no ${names.join(" or ")} (a positive integer)`);
}

/** `config[name]` as an integer of at least `min`; `null` when absent. */
function optionalCount(config: Record<string, unknown>, name: string, min = 1): number | null {
  const value = config[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > 1 << 20) {
    throw new MoeConfigError(`config.json's ${name} is ${JSON.stringify(value)}, not an integer`);
  }
  return value;
}
