/**
 * xtuner-style trajectory records: one JSON object per line, with the lengths, the raw prompt
 * text, the reward payload, the finish reason and the tool turns beside the token arrays.
 *
 * @module
 */
import type { ChainArrays } from "../chain/mod.ts";
import type { RewardedSession } from "../session/mod.ts";
import type { ChatTokenizer } from "../tokenizer/mod.ts";
import type { TrainingSegment } from "./allocate_reward.ts";
import type { MoeShape } from "../engine/mod.ts";
import {
  type ExportedImage,
  type SegmentIdentity,
  segmentIdentity,
  segmentImages,
  segmentRoutes,
} from "./samples.ts";
import type { ExportedRoutes } from "./segment_routes.ts";

/** One line of the JSONL export. */
export interface JsonlRecord extends SegmentIdentity {
  readonly prompt_len: number;
  readonly response_len: number;
  /** The first turn's prompt as text (the template's rendering). */
  readonly raw_prompt: string;
  /** The segment's share of the score. */
  readonly reward: number | null;
  /** The trainer's whole reward payload. */
  readonly reward_payload: RewardedSession["reward"];
  readonly finish_reason: string | null;
  /** Turns whose reply called at least one tool. */
  readonly tool_turns: number;
  readonly prompt_ids: number[];
  readonly response_ids: number[];
  readonly loss_mask: number[];
  readonly logprobs: number[];
  /** The weight version of each sampled response token, run-length (see `ChainArrays`). */
  readonly version_spans: ChainArrays["version_spans"];
  /** The images the tokens hold (`ExportedImage`s); absent without images. */
  readonly images?: ExportedImage[];
  /** The routed experts (R3), to fetch as a `.npy`; absent without them. */
  readonly routed_experts?: ExportedRoutes;
}

/**
 * A segment as a JSONL record.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { openSession, startTurn } from "../session/mod.ts";
 * import { readSessionSegments, selectSegments, toJsonl } from "./mod.ts";
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
 * const line = JSON.stringify(toJsonl(session, segment, deps.tokenizer));
 * assert.equal(JSON.parse(line).session_id, id);
 * await deps.close();
 * ```
 */
export function toJsonl(
  session: RewardedSession,
  segment: TrainingSegment,
  tokenizer: Pick<ChatTokenizer, "decode">,
  moe?: MoeShape,
): JsonlRecord {
  const { prompt_ids, response_ids, loss_mask, logprobs, version_spans } = segment.arrays;
  const images = segmentImages(session.id, segment.turns);
  const routes = segmentRoutes(session, segment, moe);
  return {
    ...segmentIdentity(session, segment),
    prompt_len: prompt_ids.length,
    response_len: response_ids.length,
    raw_prompt: tokenizer.decode(prompt_ids),
    reward: segment.reward,
    reward_payload: session.reward,
    finish_reason: segment.stats.finish_reason,
    tool_turns: segment.stats.tool_turns,
    prompt_ids,
    response_ids,
    loss_mask,
    logprobs,
    version_spans,
    ...(images.length > 0 ? { images } : {}),
    ...(routes ? { routed_experts: routes } : {}),
  };
}
