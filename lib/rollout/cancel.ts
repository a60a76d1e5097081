/**
 * Cancelling a job: its record says so, and the worker running it — in this process or another
 * — stops it (the agent killed, its engine requests aborted as its connections drop, its sandbox
 * killed, its session closed as aborted). A job nobody runs is finished by the next scan.
 *
 * @module
 */
import { getRolloutJob, modifyRolloutJob } from "./rollout_store.ts";
import { pollUntil } from "../timing/mod.ts";
import { JobNotFoundError } from "./job_view.ts";
import { FINAL_PHASES, type RolloutJobRecord } from "./records.ts";
import type { Store } from "../kv/mod.ts";

/**
 * Marks job `jobId` cancelled; resolves to its record. A finished job is left as it is.
 *
 * @throws {JobNotFoundError}
 */
export async function requestCancel(kv: Store, jobId: string): Promise<RolloutJobRecord> {
  const written = await modifyRolloutJob(
    kv,
    jobId,
    (job) =>
      FINAL_PHASES.has(job.phase) || job.cancelRequested ? null : { ...job, cancelRequested: true },
  );
  if (written) return written.value;
  const job = (await getRolloutJob(kv, jobId)).value;
  if (job === null) throw new JobNotFoundError(jobId);
  return job;
}

/** Resolves once job `jobId` is finished, or after `waitMs`, to its record then. */
export async function waitFinished(
  kv: Store,
  jobId: string,
  waitMs: number,
): Promise<RolloutJobRecord | null> {
  let job: RolloutJobRecord | null = null;
  await pollUntil(async () => {
    job = (await getRolloutJob(kv, jobId)).value;
    return job === null || FINAL_PHASES.has(job.phase);
  }, { timeoutMs: waitMs, intervalMs: 25 });
  return job;
}
