/**
 * verl's `AgentLoopOutput` (verl/experimental/agent_loop): `prompt_ids`, `response_ids`,
 * `response_mask`, `response_logprobs`, `reward_score`, `num_turns`, `metrics`, `extra_fields`.
 *
 * @module
 */
import type { RewardedSession } from "../session/mod.ts";
import type { TrainingSegment } from "./allocate_reward.ts";
import type { MoeShape } from "../engine/mod.ts";
import { type ExportedImage, segmentIdentity, segmentImages, segmentRoutes } from "./samples.ts";
import type { ExportedRoutes } from "./segment_routes.ts";

/** A verl agent-loop output, as JSON. */
export interface VerlSample {
  readonly prompt_ids: number[];
  readonly response_ids: number[];
  /** 1 on sampled tokens that are trained on, 0 on tool output and template tokens. */
  readonly response_mask: number[];
  readonly response_logprobs: number[];
  readonly reward_score: number | null;
  /** User and assistant turns of the segment: two per recorded turn. */
  readonly num_turns: number;
  readonly metrics: Record<string, number>;
  /**
   * Segment kind, lineage, rollout and group ids, stats, each response token's weight version
   * (`version_spans`), the reward payload.
   */
  readonly extra_fields: Record<string, unknown>;
  /** `{image}`: the images the tokens hold (`ExportedImage`s); absent without images. */
  readonly multi_modal_data?: { readonly image: ExportedImage[] };
  /**
   * The routed experts (R3) in verl's per-sample layout: a row for every token of `prompt_ids ++
   * response_ids` × layers × top-k (the last, never forwarded, `-1`), to fetch as a `.npy`.
   */
  readonly routed_experts?: ExportedRoutes;
}

/**
 * A segment as a verl agent-loop output.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { openSession, startTurn } from "../session/mod.ts";
 * import { readSessionSegments, selectSegments, toVerl } from "./mod.ts";
 * // A session of one turn, answered by the built-in scripted engine.
 * const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:" }));
 * const { session: { id } } = await openSession(deps.kv);
 * const messages = [{ role: "user" as const, content: "hi" }];
 * const context = { sessionId: id, signingSecret: "secret" };
 * const input = anthropicTurnInput({ model: "m", max_tokens: 64, messages }, context);
 * await (await startTurn(deps, input)).completion;
 * const { session, segments: all } = await readSessionSegments(deps.kv, id);
 * const policy = { allocation: "uniform", includeSide: false, overlong: "mask" } as const;
 * const limits = { maxSegments: 64, maxSegmentTokens: 0 };
 * const { segments: [segment] } = selectSegments(session, all, { ...policy, ...limits });
 * assert.equal(
 *   toVerl(session, segment).response_mask.length,
 *   segment.arrays.response_ids.length,
 * );
 * await deps.close();
 * ```
 */
export function toVerl(
  session: RewardedSession,
  segment: TrainingSegment,
  moe?: MoeShape,
): VerlSample {
  const { prompt_ids, response_ids, loss_mask, logprobs, version_spans } = segment.arrays;
  const { stats } = segment;
  const images = segmentImages(session.id, segment.turns);
  const routes = segmentRoutes(session, segment, moe, "verl");
  return {
    prompt_ids,
    response_ids,
    response_mask: loss_mask,
    response_logprobs: logprobs,
    reward_score: segment.reward,
    num_turns: 2 * stats.turns,
    metrics: {
      generate_sequences: segment.turns.reduce((sum, turn) => sum + turn.timings.engineMs, 0) /
        1000,
      tool_calls: segment.turns.reduce((sum, turn) => sum + turn.toolCalls, 0),
      masked_turns: stats.masked_turns,
      ill_formed_turns: stats.ill_formed_turns,
      engine_aborts: stats.aborts,
    },
    extra_fields: {
      ...segmentIdentity(session, segment),
      version_spans,
      reward_payload: session.reward,
    },
    ...(images.length > 0 ? { multi_modal_data: { image: images } } : {}),
    ...(routes ? { routed_experts: routes } : {}),
  };
}
