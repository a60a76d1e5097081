/**
 * slime's `Sample` (slime/utils/types.py): `tokens` = prompt + response, `response_length`,
 * `loss_mask` and `rollout_log_probs` over the response, `reward`, `status`, `metadata`.
 *
 * @module
 */
import type { RewardedSession } from "../session/mod.ts";
import type { TrainingSegment } from "./allocate_reward.ts";
import type { MoeShape } from "../engine/mod.ts";
import { type ExportedImage, segmentIdentity, segmentImages, segmentRoutes } from "./samples.ts";
import type { ExportedRoutes } from "./segment_routes.ts";

/** A slime sample, as JSON. */
export interface SlimeSample {
  readonly tokens: number[];
  readonly response_length: number;
  /** 1 where the token was sampled and is trained on, over the response. */
  readonly loss_mask: number[];
  /** The engine's logprob of each response token (0 where it did not sample). */
  readonly rollout_log_probs: number[];
  /** The segment's share of the session's score, or `null` before a reward was set. */
  readonly reward: number | null;
  /** The weight versions that sampled the segment, in order of first use. */
  readonly weight_versions: readonly string[];
  /** `completed`, or `truncated` when the last turn was cut by max_tokens. */
  readonly status: "completed" | "truncated";
  /**
   * Segment kind, lineage, rollout and group ids, stats, each response token's weight version
   * (`version_spans`), the reward payload, session metadata.
   */
  readonly metadata: Record<string, unknown>;
  /** `{images}`: the images the tokens hold (`ExportedImage`s); absent without images. */
  readonly multimodal_inputs?: { readonly images: ExportedImage[] };
  /**
   * The routed experts (R3): `len(tokens) - 1` rows × layers × top-k, as slime's `Sample`
   * checks them, to fetch as a `.npy` (the Python client reads it into bytes and a shape).
   */
  readonly rollout_routed_experts?: ExportedRoutes;
}

/**
 * A segment as a slime sample.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { openSession, startTurn } from "../session/mod.ts";
 * import { readSessionSegments, selectSegments, toSlime } from "./mod.ts";
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
 * const sample = toSlime(session, segment);
 * assert.equal(sample.tokens.length, sample.response_length + segment.arrays.prompt_ids.length);
 * await deps.close();
 * ```
 */
export function toSlime(
  session: RewardedSession,
  segment: TrainingSegment,
  moe?: MoeShape,
): SlimeSample {
  const { prompt_ids, response_ids, loss_mask, logprobs, version_spans } = segment.arrays;
  const images = segmentImages(session.id, segment.turns);
  const routes = segmentRoutes(session, segment, moe);
  return {
    tokens: [...prompt_ids, ...response_ids],
    response_length: response_ids.length,
    loss_mask,
    rollout_log_probs: logprobs,
    reward: segment.reward,
    weight_versions: segment.stats.weight_versions,
    status: segment.stats.finish_reason === "length" ? "truncated" : "completed",
    metadata: {
      ...segmentIdentity(session, segment),
      version_spans,
      reward_payload: session.reward,
      session_metadata: session.metadata,
    },
    ...(images.length > 0 ? { multimodal_inputs: { images } } : {}),
    ...(routes ? { rollout_routed_experts: routes } : {}),
  };
}
