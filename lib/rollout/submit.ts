/**
 * Submitting a group: n queued jobs sharing one task spec and one set of settings, written to
 * KV in one commit, for any worker on the KV to take.
 *
 * @module
 */
import { createRolloutGroup } from "./rollout_store.ts";
import type { RolloutJobRecord } from "./records.ts";
import type { RolloutRequest, RolloutSettings } from "./request.ts";
import type { Store } from "../kv/mod.ts";

/** The ids a submission returns. */
export interface SubmittedGroup {
  readonly groupId: string;
  readonly jobIds: string[];
}

/**
 * Writes a group of `request.n` queued jobs.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RolloutRequestSchema } from "./request.ts";
 * import { submitGroup } from "./submit.ts";
 * const kv = await Deno.openKv(":memory:");
 * const body = {
 *   task: { repo: "/r", base_commit: "abc1234", problem_statement: "Fix it", eval_cmd: "true" },
 *   agent: { harness: "command", command: "python3 agent.py --task {prompt}" },
 *   n: 2,
 * };
 * const { jobIds } = await submitGroup(kv, RolloutRequestSchema.parse(body));
 * // Queued for the workers; `worker.kick()` wakes this process's.
 * assert.equal(jobIds.length, 2);
 * kv.close();
 * ```
 */
export async function submitGroup(
  kv: Store,
  request: RolloutRequest,
  now = Date.now(),
): Promise<SubmittedGroup> {
  const groupId = `grp_${randomHex(12)}`;
  const { task, ...settings } = request;
  const jobs = Array.from({ length: request.n }, (_, index) =>
    queuedJob({
      id: `job_${randomHex(12)}`,
      groupId,
      index,
      maxAttempts: request.max_attempts,
      createdAt: now,
    }));
  await createRolloutGroup(
    kv,
    {
      id: groupId,
      createdAt: now,
      jobs: jobs.map((job) => job.id),
      settings: settings satisfies RolloutSettings,
    },
    task,
    jobs,
  );
  return { groupId, jobIds: jobs.map((job) => job.id) };
}

/** A job record as it is first written: queued, never attempted. */
export function queuedJob(
  job: Pick<RolloutJobRecord, "id" | "groupId" | "index" | "maxAttempts" | "createdAt">,
): RolloutJobRecord {
  return {
    ...job,
    phase: "queued",
    reason: null,
    detail: null,
    attempt: 0,
    sessionId: null,
    sessions: [],
    startedAt: null,
    finishedAt: null,
    deadlineAt: null,
    cancelRequested: false,
    worker: null,
    agent: null,
    blobs: {},
  };
}

function randomHex(bytes: number): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(bytes)),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}
