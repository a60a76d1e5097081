/**
 * A rollout group at a glance: how many of its jobs are in each phase, and, over its finished
 * jobs, the scores and the tool turns (mean, min, max). Read from the job records alone, so
 * listing groups never reads a session or a blob.
 *
 * @module
 */
import { listChains, readLiveTurns } from "../session/mod.ts";
import { listGroupJobs } from "./rollout_store.ts";
import { ROLLOUT_PHASES } from "../metrics/mod.ts";
import type { RolloutGroupRecord, RolloutJobRecord, RolloutPhase } from "./records.ts";
import type { Store } from "../kv/mod.ts";

/** Mean, least and most of some numbers; `null` when there are none. */
export interface Spread {
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

/** A group as its summary shows it. */
export interface GroupSummary {
  readonly id: string;
  readonly createdAt: number;
  readonly jobs: number;
  /** Jobs in each phase (every phase named, 0 included). */
  readonly phases: Readonly<Record<RolloutPhase, number>>;
  /** Over the `done` jobs. */
  readonly score: Spread | null;
  /** Over the `done` jobs: turns whose reply carried tool calls. */
  readonly toolTurns: Spread | null;
}

/** Phases in the order a job goes through them (the metrics' list, checked against the type). */
export const PHASE_ORDER: readonly RolloutPhase[] = ROLLOUT_PHASES;

/**
 * The spread of `values`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { spread } from "./group_view.ts";
 * assert.deepEqual(spread([2, 4, 9]), { mean: 5, min: 2, max: 9 });
 * assert.equal(spread([]), null);
 * ```
 */
export function spread(values: readonly number[]): Spread | null {
  if (values.length === 0) return null;
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  for (const value of values) {
    sum += value;
    min = Math.min(min, value);
    max = Math.max(max, value);
  }
  return { mean: sum / values.length, min, max };
}

/** The summary of `group` from its job records. */
export function summarizeGroup(
  group: RolloutGroupRecord,
  jobs: readonly RolloutJobRecord[],
): GroupSummary {
  const phases = Object.fromEntries(PHASE_ORDER.map((phase) => [phase, 0])) as Record<
    RolloutPhase,
    number
  >;
  for (const job of jobs) phases[job.phase]++;
  const done = jobs.filter((job) => job.phase === "done");
  return {
    id: group.id,
    createdAt: group.createdAt,
    jobs: group.jobs.length,
    phases,
    score: spread(done.flatMap((job) => job.score === undefined ? [] : [job.score])),
    toolTurns: spread(done.flatMap((job) => job.toolTurns === undefined ? [] : [job.toolTurns])),
  };
}

/** Reads `group`'s jobs and summarizes it. */
export async function readGroupSummary(
  kv: Store,
  group: RolloutGroupRecord,
): Promise<GroupSummary> {
  return summarizeGroup(group, await listGroupJobs(kv, group));
}

/** Turns of a session's live chains whose reply carried tool calls (side requests left out). */
export async function sessionToolTurns(kv: Store, sessionId: string): Promise<number> {
  let count = 0;
  for (const header of await listChains(kv, sessionId)) {
    if (header.role === "side") continue;
    for (const turn of await readLiveTurns(kv, header)) if (turn.toolCalls > 0) count++;
  }
  return count;
}
