/**
 * The default export of a training segment: the token arrays with each turn's facts, the
 * segment's kind and lineage, its reward, and the ids that keep one episode's segments together.
 *
 * @module
 */
import type { ChainArrays, SegmentKind } from "../chain/mod.ts";
import { metadataText } from "../limits/mod.ts";
import type { RewardedSession } from "../session/mod.ts";
import type { TrainingSegment } from "./allocate_reward.ts";
import type { Lineage, SegmentStats } from "./segments.ts";

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
  readonly kind: SegmentKind;
  readonly chain_id: string;
  /** The session: every segment of one episode has the same rollout id. */
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
}

/** The ids and facts every export carries for a segment. */
export function segmentIdentity(
  session: RewardedSession,
  segment: TrainingSegment,
): SegmentIdentity {
  const group = session.metadata.group_id;
  return {
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
export function toSample(session: RewardedSession, segment: TrainingSegment): Sample {
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
  };
}
