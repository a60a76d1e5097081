/**
 * The export formats of a session's samples (`GET /sessions/:id/samples?format=`, a rollout
 * job's result): each turns one selected, rewarded segment into one record of its trainer's
 * shape. A new format is a file with its converter and a line here. `raw` (the session as
 * recorded, not per segment) is the route's own.
 *
 * @module
 */
import type { ChatTokenizer } from "../tokenizer/mod.ts";
import type { RewardedSession } from "../session/mod.ts";
import type { TrainingSegment } from "./allocate_reward.ts";
import { toJsonl } from "./export_jsonl.ts";
import { toSlime } from "./export_slime.ts";
import { toVerl } from "./export_verl.ts";
import { recordedTools, toXtuner } from "./export_xtuner.ts";
import { toSample } from "./samples.ts";
import type { Store } from "../kv/mod.ts";
import type { MoeShape } from "../engine/mod.ts";

/** What a converter may read besides the segment: the KV (recorded requests), the tokenizer. */
export interface ExportContext {
  readonly kv: Store;
  readonly tokenizer: Pick<ChatTokenizer, "decode" | "encode" | "formats" | "ending">;
  /** The served model's MoE shape when routed experts are recorded (`ROUTED_EXPERTS`). */
  readonly moe?: MoeShape;
}

/** One export format. */
export interface ExportFormat {
  /** Its `format=` value. */
  readonly name: string;
  /** The key of the answer's list: `samples` (trainer samples) or `records` (dataset lines). */
  readonly list: "samples" | "records";
  /** One segment of `session` as this format's record. */
  record(
    session: RewardedSession,
    segment: TrainingSegment,
    context: ExportContext,
  ): unknown | Promise<unknown>;
}

/** Every export format, the default first. */
export const EXPORT_FORMATS: readonly ExportFormat[] = [
  {
    name: "samples",
    list: "samples",
    record: (session, segment, { moe }) => toSample(session, segment, moe),
  },
  {
    name: "slime",
    list: "samples",
    record: (session, segment, { moe }) => toSlime(session, segment, moe),
  },
  {
    name: "verl",
    list: "samples",
    record: (session, segment, { moe }) => toVerl(session, segment, moe),
  },
  {
    name: "jsonl",
    list: "records",
    record: (session, segment, { tokenizer, moe }) => toJsonl(session, segment, tokenizer, moe),
  },
  {
    name: "xtuner",
    list: "records",
    record: async (session, segment, { kv, tokenizer }) =>
      toXtuner(session, segment, tokenizer, await recordedTools(kv, session.id, segment)),
  },
];

/** The format called `name`, or `undefined`. */
export function exportFormat(name: string): ExportFormat | undefined {
  return EXPORT_FORMATS.find((format) => format.name === name);
}

/**
 * `segments` of `session` in `format`: `{samples}` or `{records}`, one per segment in order
 * (converted one after another: a converter may read the KV).
 */
export async function exportSegments(
  format: ExportFormat,
  session: RewardedSession,
  segments: readonly TrainingSegment[],
  context: ExportContext,
): Promise<Record<string, unknown[]>> {
  const records: unknown[] = [];
  for (const segment of segments) records.push(await format.record(session, segment, context));
  return { [format.list]: records };
}
