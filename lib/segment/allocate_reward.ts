/**
 * Which segments of a session are trained on, and the reward each carries (docs/DESIGN.md §5): side
 * segments only when asked; tokens sampled by weights too far behind the trainer's (masked, or
 * their segment dropped); caps on the number of segments (the head and the final are kept) and on
 * tokens per segment (dropped or masked); the session's score shared out by a policy.
 * Everything left out is recorded with its reason.
 *
 * @module
 */
import type { RewardedSession } from "../session/mod.ts";
import type { Segment } from "./segments.ts";
import type { RewardAllocation } from "../config/mod.ts";
import { type StalenessPolicy, staleSpans } from "./staleness.ts";

/** The choices of an export. */
export interface SegmentPolicy {
  /** `uniform`: score / K each; `copy`: the score each; `final_only`: the score to the final. */
  readonly allocation: RewardAllocation;
  /** Train on side segments (titles, summaries, a small model's requests) too. */
  readonly includeSide: boolean;
  /** Most segments kept; beyond it the first ones and the final are kept. */
  readonly maxSegments: number;
  /** Most tokens (prompt and response) in a segment; 0 for no cap. */
  readonly maxSegmentTokens: number;
  /** A segment over `maxSegmentTokens`: left out, or kept with its loss mask all 0. */
  readonly overlong: "drop" | "mask";
  /** The trainer's bound on how old the weights that sampled a trained token may be. */
  readonly staleness?: StalenessPolicy | null;
}

/** A segment chosen for training, with its reward and what was done to it. */
export interface TrainingSegment extends Segment {
  /** Its share of the session's score; `null` before the trainer set one. */
  readonly reward: number | null;
  /** Why its loss mask was zeroed, if it was. */
  readonly masked: string | null;
  /** Sampled tokens past the staleness bound: their loss mask is 0. */
  readonly staleTokens: number;
}

/** A segment left out, and why. */
export interface DroppedSegment {
  readonly chain_id: string;
  readonly kind: string;
  readonly reason: string;
}

/**
 * Chooses the trainable segments and shares the reward.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { openSession, startTurn } from "../session/mod.ts";
 * import { readSessionSegments, selectSegments } from "./mod.ts";
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
 * assert.equal(segment.reward, null); // no score set yet
 * await deps.close();
 * ```
 */
export function selectSegments(
  session: RewardedSession,
  all: readonly Segment[],
  policy: SegmentPolicy,
): { segments: TrainingSegment[]; dropped: DroppedSegment[] } {
  const dropped: DroppedSegment[] = [];
  const drop = (segment: Segment, reason: string) =>
    dropped.push({ chain_id: segment.header.id, kind: segment.kind, reason });
  let kept: { segment: Segment; masked: string | null; stale: number }[] = [];
  for (const original of all) {
    if (original.kind === "side" && !policy.includeSide) {
      drop(original, "side segment: not trained unless include_side is set");
      continue;
    }
    const { segment, stale } = withoutStale(original, policy.staleness ?? null);
    if (stale > 0 && policy.staleness?.stale === "drop") {
      const oldest = policy.staleness.current - policy.staleness.max;
      drop(segment, `${stale} tokens sampled by weight versions older than ${oldest}`);
      continue;
    }
    const tokens = segment.arrays.prompt_ids.length + segment.arrays.response_ids.length;
    if (policy.maxSegmentTokens > 0 && tokens > policy.maxSegmentTokens) {
      const reason = `${tokens} tokens > max_segment_tokens ${policy.maxSegmentTokens}`;
      if (policy.overlong === "drop") {
        drop(segment, reason);
        continue;
      }
      kept.push({ segment, masked: reason, stale });
      continue;
    }
    kept.push({ segment, masked: null, stale });
  }
  if (kept.length > policy.maxSegments) {
    const finalAt = kept.findLastIndex(({ segment }) => segment.kind === "final");
    const last = finalAt >= 0 ? finalAt : kept.length - 1;
    const head = kept.filter((_, i) => i !== last).slice(0, Math.max(0, policy.maxSegments - 1));
    const keep = new Set([...head, kept[last]]);
    for (const item of kept) {
      if (!keep.has(item)) drop(item.segment, `over max_segments ${policy.maxSegments}`);
    }
    kept = kept.filter((item) => keep.has(item));
  }
  const score = session.reward?.score ?? null;
  const finalAt = kept.findLastIndex(({ segment }) => segment.kind === "final");
  const segments = kept.map(({ segment, masked, stale }, i): TrainingSegment => ({
    ...segment,
    arrays: masked
      ? { ...segment.arrays, loss_mask: segment.arrays.loss_mask.map(() => 0) }
      : segment.arrays,
    masked,
    staleTokens: stale,
    reward: score === null ? null : share(policy.allocation, score, kept.length, i === finalAt),
  }));
  return { segments, dropped };
}

/**
 * The segment with the loss mask of its stale tokens zeroed, and how many sampled tokens were
 * stale (those already masked included, so `drop` sees every one).
 */
function withoutStale(
  segment: Segment,
  policy: StalenessPolicy | null,
): { segment: Segment; stale: number } {
  if (policy === null) return { segment, stale: 0 };
  const spans = staleSpans(segment.arrays.version_spans, policy);
  if (spans.length === 0) return { segment, stale: 0 };
  const loss_mask = [...segment.arrays.loss_mask];
  let stale = 0;
  for (const span of spans) {
    loss_mask.fill(0, span.start, span.end);
    stale += span.end - span.start;
  }
  return { segment: { ...segment, arrays: { ...segment.arrays, loss_mask } }, stale };
}

function share(
  allocation: RewardAllocation,
  score: number,
  count: number,
  isFinal: boolean,
): number {
  switch (allocation) {
    case "uniform":
      return score / count;
    case "copy":
      return score;
    case "final_only":
      return isFinal ? score : 0;
  }
}
