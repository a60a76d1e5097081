/**
 * The default export of a training segment: the token arrays with each turn's facts, the
 * segment's kind and lineage, its reward, and the ids that keep one episode's segments together.
 *
 * @module
 */
import type { ChainArrays, SegmentKind, TurnRecord } from "../chain/mod.ts";
import { metadataText } from "../limits/mod.ts";
import type { RewardedSession } from "../session/mod.ts";
import type { TrainingSegment } from "./allocate_reward.ts";
import type { Lineage, SegmentStats } from "./segments.ts";
import type { MoeShape } from "../engine/mod.ts";
import { type ExportedRoutes, exportedRoutes, type RoutesLayout } from "./segment_routes.ts";

/** What a sample says about each of its turns. */
export interface SampleTurn {
  /** Tokens of the prompt the engine read for this turn. */
  readonly input_len: number;
  /** Tokens the engine sampled. */
  readonly output_len: number;
  readonly finish_reason: string;
  readonly flags: readonly string[];
  readonly weight_versions: readonly string[];
}

/** How a segment belongs to its episode, shared by every export format. */
export interface SegmentIdentity {
  /** The session: every segment of one episode has the same session id. */
  readonly session_id: string;
  readonly kind: SegmentKind;
  readonly chain_id: string;
  /**
   * The session id under its old name, kept for one release (docs/trainers.md): it never named a
   * rollout job, and `session_id` is what to read.
   * @deprecated Read `session_id`.
   */
  readonly rollout_id: string;
  /** The session's `group_id` metadata (GRPO group), or `null`. */
  readonly group_id: string | null;
  /** Position among the episode's segments, chronological. */
  readonly segment_index: number;
  readonly lineage: Lineage;
  readonly stats: SegmentStats;
  /** Why the segment's loss mask was zeroed, if it was. */
  readonly masked: string | null;
  /** Sampled tokens past the export's `max_staleness` (their loss mask is 0). */
  readonly stale_tokens: number;
}

/** One segment as a training sample: the default export format. */
export interface Sample extends ChainArrays, SegmentIdentity {
  readonly reward: number | null;
  readonly turns: SampleTurn[];
  /** The images the tokens hold (a vision model's); absent when there are none. */
  readonly images?: ExportedImage[];
  /** The routed experts of its tokens (`ROUTED_EXPERTS`), to fetch as a `.npy`; absent without. */
  readonly routed_experts?: ExportedRoutes;
}

/**
 * An image of a segment as every export names it: enough for a trainer to rebuild the model's
 * exact inputs, its pads at `start` (in `prompt_ids` followed by `response_ids`) for `length`
 * tokens, its bytes fetched from the gateway at `url` (admin token) and checked by `digest`.
 */
export interface ExportedImage {
  /** SHA-256 of its bytes, 64 hex digits. */
  readonly digest: string;
  readonly media_type: string;
  readonly width: number;
  readonly height: number;
  readonly bytes: number;
  readonly start: number;
  readonly length: number;
  /** `/sessions/<id>/images/<digest>`, on the gateway's trainer surface. */
  readonly url: string;
}

/**
 * The images of a segment's turns, in token order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { segmentImages } from "./samples.ts";
 * const image = { digest: "d", mediaType: "image/png", width: 2, height: 3, bytes: 9, start: 5, length: 64 };
 * assert.deepEqual(segmentImages("s1", [{ images: [image] }, {}]), [{
 *   digest: "d", media_type: "image/png", width: 2, height: 3, bytes: 9, start: 5, length: 64,
 *   url: "/sessions/s1/images/d",
 * }]);
 * ```
 */
export function segmentImages(
  sessionId: string,
  turns: readonly Pick<TurnRecord, "images">[],
): ExportedImage[] {
  return turns.flatMap((turn) =>
    (turn.images ?? []).map((image) => ({
      digest: image.digest,
      media_type: image.mediaType,
      width: image.width,
      height: image.height,
      bytes: image.bytes,
      start: image.start,
      length: image.length,
      url: `/sessions/${encodeURIComponent(sessionId)}/images/${image.digest}`,
    }))
  );
}

/** The ids and facts every export carries for a segment. */
export function segmentIdentity(
  session: RewardedSession,
  segment: TrainingSegment,
): SegmentIdentity {
  const group = session.metadata.group_id;
  return {
    session_id: session.id,
    kind: segment.kind,
    chain_id: segment.header.id,
    rollout_id: session.id,
    group_id: group === undefined || group === null ? null : metadataText(group),
    segment_index: segment.index,
    lineage: segment.lineage,
    stats: segment.stats,
    masked: segment.masked,
    stale_tokens: segment.staleTokens,
  };
}

/**
 * The default export of a segment.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { openSession, startTurn } from "../session/mod.ts";
 * import { readSessionSegments, selectSegments, toSample } from "./mod.ts";
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
 * const sample = toSample(session, segment);
 * assert.equal(sample.loss_mask.length, sample.response_ids.length);
 * await deps.close();
 * ```
 */
export function toSample(
  session: RewardedSession,
  segment: TrainingSegment,
  moe?: MoeShape,
): Sample {
  const images = segmentImages(session.id, segment.turns);
  const routes = segmentRoutes(session, segment, moe);
  return {
    ...segmentIdentity(session, segment),
    ...segment.arrays,
    reward: segment.reward,
    turns: segment.turns.map((record) => ({
      input_len: record.inputLen,
      output_len: record.outputLen,
      finish_reason: record.finishReason,
      flags: record.flags,
      weight_versions: record.weightVersions,
    })),
    ...(images.length > 0 ? { images } : {}),
    ...(routes ? { routed_experts: routes } : {}),
  };
}

/** What an export says of a segment's routed experts, in `layout`; `null` without them. */
export function segmentRoutes(
  session: RewardedSession,
  segment: TrainingSegment,
  moe: MoeShape | undefined,
  layout: RoutesLayout = "slime",
): ExportedRoutes | null {
  const { prompt_ids, response_ids } = segment.arrays;
  return exportedRoutes(
    session.id,
    segment.header.id,
    segment.turns,
    prompt_ids.length + response_ids.length,
    moe,
    layout,
  );
}
