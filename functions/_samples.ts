/**
 * A session's samples in the export formats, shared by `GET /sessions/:id/samples` and the
 * result of `GET /rollout/:id`.
 *
 * @module
 */
import { z } from "zod";
import {
  EXPORT_FORMATS,
  exportFormat,
  exportSegments,
  rawRecord,
  readSessionSegments,
  selectSegments,
  type StalenessPolicy,
  versionNumber,
} from "../lib/segment/mod.ts";
import { REWARD_ALLOCATIONS } from "../lib/config/mod.ts";
import type { Deps } from "./_deps.ts";
import { sessionJson } from "./_views.ts";

/** What a samples export reads: the session's records, the tokenizer, the weight versions. */
export type SamplesDeps = Pick<Deps, "kv" | "config" | "control" | "tokenizer" | "moe">;

/** The query of a samples export. */
export const SamplesQuery = z.strictObject({
  /** A registered export format, or `raw` (the session as recorded). */
  format: z.enum(["raw", ...EXPORT_FORMATS.map((format) => format.name)])
    .default(EXPORT_FORMATS[0].name),
  /** How the session's reward is shared among its segments; the session's when unset. */
  reward_allocation: z.enum(REWARD_ALLOCATIONS).optional(),
  /** The old name of `reward_allocation`, still read. */
  allocation: z.enum(REWARD_ALLOCATIONS).optional(),
  include_side: z.enum(["true", "false"]).transform((v) => v === "true").optional(),
  max_segments: z.coerce.number().int().min(1).optional(),
  max_segment_tokens: z.coerce.number().int().min(0).optional(),
  overlong: z.enum(["drop", "mask"]).optional(),
  /** Most weight versions a trained token may lag the trainer's by (see `lib/segment/staleness.ts`). */
  max_staleness: z.coerce.number().int().min(0).max(1e9).optional(),
  /** The trainer's version now; unset: the engine's (`GET /get_weight_version`, the highest). */
  current_version: z.string().regex(/^(\d{1,15}|default)$/).optional(),
  /** A stale token: its loss mask zeroed, or its segment left out. */
  stale: z.enum(["mask", "drop"]).default("mask"),
}).refine(
  (query) =>
    !query.allocation || !query.reward_allocation ||
    query.allocation === query.reward_allocation,
  { path: ["allocation"], message: "the old name of reward_allocation, which says otherwise" },
);

/** A validated samples query. */
export type SamplesQuery = z.output<typeof SamplesQuery>;

/**
 * The session's samples: `{samples, dropped}` in the JSON formats, the raw record for `raw`
 * (its `session` as `GET /sessions/:id` shows it, its chains' heads and turns as recorded, their
 * keys in snake_case), and
 * `{records, dropped}` for `jsonl` (one xtuner-style record per sample) and `xtuner` (one
 * trajectory record per sample, message by message with token ids).
 */
export async function exportSamples(
  deps: SamplesDeps,
  sessionId: string,
  query: SamplesQuery,
): Promise<unknown> {
  if (query.format === "raw") {
    const { session, chains } = await rawRecord(deps.kv, sessionId);
    return { session: sessionJson(session), chains };
  }
  const { session, segments: all } = await readSessionSegments(deps.kv, sessionId);
  const { segments, dropped } = selectSegments(session, all, {
    allocation: query.reward_allocation ?? query.allocation ?? session.allocation ??
      deps.config.rewardAllocation,
    includeSide: query.include_side ?? deps.config.trainSideSegments,
    maxSegments: query.max_segments ?? deps.config.maxSegments,
    maxSegmentTokens: query.max_segment_tokens ?? deps.config.maxSegmentTokens,
    overlong: query.overlong ?? deps.config.overlongSegments,
    staleness: query.max_staleness === undefined ? null : await stalenessPolicy(deps, query),
  });
  const records = await exportSegments(exportFormat(query.format)!, session, segments, deps);
  return { ...records, dropped };
}

/** The export's staleness bound, at the trainer's version or, unsaid, the engine's newest. */
async function stalenessPolicy(deps: SamplesDeps, query: SamplesQuery): Promise<StalenessPolicy> {
  const current = query.current_version ??
    (await deps.control.weightVersions()).map((worker) => worker.version)
      .reduce((a, b) => versionNumber(a) >= versionNumber(b) ? a : b);
  return { current: versionNumber(current), max: query.max_staleness!, stale: query.stale };
}
