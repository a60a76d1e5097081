/**
 * A session's samples in the export formats, shared by `GET /sessions/:id/samples`, the result of
 * `GET /rollout/:id` and a group's `GET /rollout/groups/:group_id/samples`; `format=tree` holds
 * them as one prefix tree (`lib/segment/prefix_tree.ts`).
 *
 * @module
 */
import { z } from "zod";
import { dtypeBytes, type MoeShape, rowWidth } from "../lib/engine/mod.ts";
import {
  type DroppedSegment,
  EXPORT_FORMATS,
  exportDtype,
  exportFormat,
  exportSegments,
  rawRecord,
  readSessionSegments,
  type SampleTree,
  sampleTree,
  segmentRouteValues,
  selectSegments,
  type StalenessPolicy,
  toSample,
  type TrainingSegment,
  type TreeInput,
  versionNumber,
} from "../lib/segment/mod.ts";
import { InvalidRequestError } from "../lib/errors/mod.ts";
import { type RewardedSession, SessionNotFoundError } from "../lib/session/mod.ts";
import { REWARD_ALLOCATIONS } from "../lib/config/mod.ts";
import type { Deps } from "./_deps.ts";
import { sessionJson } from "./_views.ts";

/** What a samples export reads: the session's records, the tokenizer, the weight versions. */
export type SamplesDeps = Pick<Deps, "kv" | "config" | "control" | "tokenizer" | "moe" | "metrics">;

/** The query of a samples export. */
export const SamplesQuery = z.strictObject({
  /**
   * A registered export format, `raw` (the session as recorded) or `tree` (the default format's
   * samples as one prefix tree).
   */
  format: z.enum(["raw", "tree", ...EXPORT_FORMATS.map((format) => format.name)])
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
 * keys in snake_case), `{nodes, leaves, stats, dropped}` for `tree`, and
 * `{records, dropped}` for `jsonl` (one xtuner-style record per sample) and `xtuner` (one
 * trajectory record per sample, message by message with token ids).
 */
export async function exportSamples(
  deps: SamplesDeps,
  sessionId: string,
  query: SamplesQuery,
): Promise<unknown> {
  if (query.format === "raw") return await rawExport(deps, sessionId);
  const selected = await selectedSegments(deps, sessionId, query);
  if (query.format === "tree") {
    return { ...await exportTree(deps, [selected]), dropped: selected.dropped };
  }
  const records = await exportSegments(
    exportFormat(query.format)!,
    selected.session,
    selected.segments,
    deps,
  );
  return { ...records, dropped: selected.dropped };
}

/** The raw export of a session: its record as `GET /sessions/:id` shows it, its chains. */
export async function rawExport(deps: SamplesDeps, sessionId: string) {
  const { session, chains } = await rawRecord(deps.kv, sessionId);
  return { session: sessionJson(session), chains };
}

/** A session's segments the query selects, their rewards shared out, and those it left out. */
export interface SelectedSegments {
  readonly session: RewardedSession;
  readonly segments: TrainingSegment[];
  readonly dropped: DroppedSegment[];
}

/** The segments of a session a query selects, as every format but `raw` exports them. */
export async function selectedSegments(
  deps: SamplesDeps,
  sessionId: string,
  query: SamplesQuery,
): Promise<SelectedSegments> {
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
  return { session, segments, dropped };
}

/**
 * The selected segments of sessions as one prefix tree of their default-format samples, in
 * order, each with its routed experts' rows to compare (read from the store: an export, not a
 * turn); both token counts go to `/metrics`.
 */
export async function exportTree(
  deps: SamplesDeps,
  selections: readonly SelectedSegments[],
): Promise<SampleTree> {
  const inputs: TreeInput[] = [];
  for (const { session, segments } of selections) {
    for (const segment of segments) {
      const sample = toSample(session, segment, deps.moe);
      const routes = sample.routed_experts
        ? await segmentRouteValues(deps.kv, session.id, segment, deps.moe)
        : null;
      inputs.push(routes ? { sample, routes } : { sample });
    }
  }
  const tree = sampleTree(inputs);
  deps.metrics.treeExportTokens.add(tree.stats.tree_tokens, "tree");
  deps.metrics.treeExportTokens.add(tree.stats.flat_tokens, "flat");
  return tree;
}

/** The export's staleness bound, at the trainer's version or, unsaid, the engine's newest. */
async function stalenessPolicy(deps: SamplesDeps, query: SamplesQuery): Promise<StalenessPolicy> {
  const current = query.current_version ??
    (await deps.control.weightVersions()).map((worker) => worker.version)
      .reduce((a, b) => versionNumber(a) >= versionNumber(b) ? a : b);
  return { current: versionNumber(current), max: query.max_staleness!, stale: query.stale };
}

/** A group's job as its samples' export reads it. */
export interface GroupJob {
  readonly id: string;
  readonly phase: string;
  /** Whether it has ended (its phase final): a group with one not ended is `partial`. */
  readonly ended: boolean;
  readonly sessionId: string | null;
}

/**
 * A page of a group's samples: at most `max` jobs (`default` unless asked), and it ends after the
 * job whose samples bring it to `tokens` tokens (the next page starts at the job after), so one
 * answer stays bounded however long the episodes are. A tree of routed experts also holds its
 * samples' rows while it is built: its page ends at `routeBytes` of them (256 MiB: 349k tokens
 * of Qwen3-30B-A3B's 48 layers × top-8 as int16) when that comes first.
 */
export const GROUP_PAGE = {
  max: 64,
  default: 16,
  tokens: 1_000_000,
  routeBytes: 256 * 1024 * 1024,
} as const;

/** The tokens a group's page may reach in `format` (see {@linkcode GROUP_PAGE}). */
export function pageTokenBound(format: string, moe: MoeShape | undefined): number {
  if (format !== "tree" || !moe) return GROUP_PAGE.tokens;
  const perToken = rowWidth(moe) * dtypeBytes(exportDtype(moe));
  return Math.min(GROUP_PAGE.tokens, Math.floor(GROUP_PAGE.routeBytes / perToken));
}

/** The paging query of a group's samples. */
export const GroupPage = z.strictObject({
  /** Where the page starts: the `next_cursor` of the page before (the first page without). */
  cursor: z.string().regex(/^\d{1,4}$/, "a next_cursor this route answered").optional(),
  /** Jobs a page covers. */
  limit: z.coerce.number().int().min(1).max(GROUP_PAGE.max).default(GROUP_PAGE.default),
});

/** A validated group page. */
export type GroupPage = z.output<typeof GroupPage>;

/**
 * One page of a group's samples (`GET /rollout/groups/:group_id/samples`): the samples of its
 * jobs from `cursor` on, `limit` of them or fewer (the page ends after the job that brings it to
 * `tokenBound` tokens), that are done — in `format` as one session's export
 * has them (`raw`: `{sessions}`; `tree`: one tree over the page), each dropped segment with its
 * session. `partial` says some job of the group has not ended yet; a job done whose session
 * passed its retention exports nothing (`exported: false`).
 *
 * @throws {InvalidRequestError} for a cursor past the group's end.
 */
export async function exportGroupSamples(
  deps: SamplesDeps,
  jobs: readonly GroupJob[],
  query: SamplesQuery,
  page: GroupPage,
  tokenBound: number = pageTokenBound(query.format, deps.moe),
): Promise<Record<string, unknown>> {
  const start = page.cursor === undefined ? 0 : Number(page.cursor);
  if (start > jobs.length) {
    throw new InvalidRequestError(`cursor: past the group's ${jobs.length} jobs`);
  }
  const selections: SelectedSegments[] = [];
  const raws: unknown[] = [];
  const listed: { id: string; phase: string; session_id: string | null; exported: boolean }[] = [];
  let tokens = 0;
  for (const job of jobs.slice(start, start + page.limit)) {
    let exported = false;
    if (job.phase === "done" && job.sessionId !== null) {
      try {
        if (query.format === "raw") {
          const raw = await rawExport(deps, job.sessionId);
          raws.push(raw);
          for (const chain of raw.chains) {
            for (const { tokens: t } of chain.turns) {
              tokens += t.delta.length + t.output.length + t.closing.length;
            }
          }
        } else {
          const selected = await selectedSegments(deps, job.sessionId, query);
          selections.push(selected);
          tokens += selected.segments.reduce(
            (n, { arrays }) => n + arrays.prompt_ids.length + arrays.response_ids.length,
            0,
          );
        }
        exported = true;
      } catch (error) {
        if (!(error instanceof SessionNotFoundError)) throw error; // past its retention
      }
    }
    listed.push({ id: job.id, phase: job.phase, session_id: job.sessionId, exported });
    if (tokens >= tokenBound) break;
  }
  const end = start + listed.length;
  const head = {
    partial: jobs.some((job) => !job.ended),
    jobs: listed,
    next_cursor: end < jobs.length ? String(end) : null,
  };
  if (query.format === "raw") return { ...head, sessions: raws };
  const dropped = selections.flatMap(({ session, dropped }) =>
    dropped.map((segment) => ({ session_id: session.id, ...segment }))
  );
  if (query.format === "tree") return { ...head, ...await exportTree(deps, selections), dropped };
  const format = exportFormat(query.format)!;
  const records: unknown[] = [];
  for (const { session, segments } of selections) {
    records.push(...(await exportSegments(format, session, segments, deps))[format.list]);
  }
  return { ...head, [format.list]: records, dropped };
}
