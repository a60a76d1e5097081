/**
 * A session's samples in the export formats, shared by `GET /sessions/:id/samples` and the
 * result of `GET /rollout/:id`.
 *
 * @module
 */
import { z } from "zod";
import {
  rawRecord,
  readSessionSegments,
  selectSegments,
  toJsonl,
  toSample,
  toSlime,
  toVerl,
} from "../lib/segment/mod.ts";
import type { Deps } from "./_deps.ts";

const Allocation = z.enum(["uniform", "copy", "final_only"]);

/** The query of a samples export. */
export const SamplesQuery = z.object({
  format: z.enum(["samples", "raw", "slime", "verl", "jsonl"]).default("samples"),
  allocation: Allocation.optional(),
  include_side: z.enum(["true", "false"]).transform((v) => v === "true").optional(),
  max_segments: z.coerce.number().int().min(1).optional(),
  max_segment_tokens: z.coerce.number().int().min(0).optional(),
  overlong: z.enum(["drop", "mask"]).optional(),
});

/** A validated samples query. */
export type SamplesQuery = z.output<typeof SamplesQuery>;

/**
 * The session's samples: `{samples, dropped}` in the JSON formats, the raw record for `raw`,
 * and `{records, dropped}` (one xtuner-style record per sample) for `jsonl`.
 */
export async function exportSamples(
  deps: Deps,
  sessionId: string,
  query: SamplesQuery,
): Promise<unknown> {
  if (query.format === "raw") return await rawRecord(deps.kv, sessionId);
  const { session, segments: all } = await readSessionSegments(deps.kv, sessionId);
  const { segments, dropped } = selectSegments(session, all, {
    allocation: query.allocation ?? session.allocation ?? deps.config.rewardAllocation,
    includeSide: query.include_side ?? deps.config.trainSideSegments,
    maxSegments: query.max_segments ?? deps.config.maxSegments,
    maxSegmentTokens: query.max_segment_tokens ?? deps.config.maxSegmentTokens,
    overlong: query.overlong ?? deps.config.overlongSegments,
  });
  switch (query.format) {
    case "samples":
      return { samples: segments.map((s) => toSample(session, s)), dropped };
    case "slime":
      return { samples: segments.map((s) => toSlime(session, s)), dropped };
    case "verl":
      return { samples: segments.map((s) => toVerl(session, s)), dropped };
    case "jsonl":
      return { records: segments.map((s) => toJsonl(session, s, deps.tokenizer)), dropped };
  }
}
