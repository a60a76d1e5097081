/**
 * Submitting a group: n queued jobs sharing one task spec and one set of settings, written to
 * KV in one commit, for any worker on the KV to take.
 *
 * @module
 */
import { bundleRepo, treeRepo } from "../evaluate/mod.ts";
import { isEnvTask } from "./env_task.ts";
import { createRolloutGroup, type GroupTree } from "./rollout_store.ts";
import type { RolloutJobRecord } from "./records.ts";
import type { RolloutRequest, RolloutSettings } from "./request.ts";
import type { Store } from "../kv/mod.ts";

/** The ids a submission returns. */
export interface SubmittedGroup {
  readonly groupId: string;
  readonly jobIds: string[];
}

/** How a group is submitted. */
export interface SubmitOptions {
  /** The group's creation time (now). */
  readonly now?: number;
  /**
   * The repository the task's `repo` names on this host only (a Harbor task's `environment/`
   * built here): kept in the store with the group, the stored task naming it `tree:<digest>`,
   * so that any host runs the jobs.
   */
  readonly environment?: { readonly digest: string; readonly path: string } | null;
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
  options: SubmitOptions = {},
): Promise<SubmittedGroup> {
  const now = options.now ?? Date.now();
  const groupId = `grp_${randomHex(12)}`;
  // Validation happened before submission: a gold patch is not kept with every group.
  const { task: given, validate: _validate, ...settings } = request;
  let task = given;
  let tree: GroupTree | undefined;
  if (options.environment) {
    if (isEnvTask(given) || "harbor" in given) {
      throw new TypeError("Only a repository task keeps a work tree in the store");
    }
    const { digest, path } = options.environment;
    tree = { digest, commit: given.base_commit, bundle: await bundleRepo(path) };
    task = { ...given, repo: treeRepo(digest) };
  }
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
    tree,
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
