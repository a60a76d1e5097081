/**
 * What a worker does with a job whose lease it just took: run it (queued, or left behind by a
 * dead worker with attempts to spare), finish it (cancelled, past its deadline, out of
 * attempts), or leave it (finished already, or waiting out a retry's backoff).
 *
 * @module
 */
import { FINAL_PHASES, type RolloutJobRecord } from "./records.ts";

/** What to do with a job whose lease was just taken. */
export type NextStep =
  | { readonly kind: "run"; readonly note: string | null }
  | {
    readonly kind: "finish";
    readonly phase: "failed" | "aborted";
    readonly reason: string;
    readonly detail: string;
  }
  | { readonly kind: "skip" }
  /** Queued for a retry whose backoff has not passed: left queued for a later scan. */
  | { readonly kind: "wait" };

/**
 * Decides the fate of a job this worker now holds the lease of: run it (queued, or left behind
 * by a dead worker with attempts to spare), finish it (cancelled, past its deadline, out of
 * attempts), or leave it (finished already).
 */
export function nextStep(job: RolloutJobRecord, now: number): NextStep {
  if (FINAL_PHASES.has(job.phase)) return { kind: "skip" };
  if (job.cancelRequested) {
    return { kind: "finish", phase: "aborted", reason: "cancelled", detail: "Cancelled by DELETE" };
  }
  if (job.phase === "queued") {
    if ((job.notBefore ?? 0) > now) return { kind: "wait" };
    return { kind: "run", note: job.detail };
  }
  // Its worker's lease ran out mid-attempt: the process died or stalled.
  const lost =
    `attempt ${job.attempt} of ${job.maxAttempts} lost its worker (${job.worker}) in phase ${job.phase}`;
  if (job.deadlineAt !== null && now >= job.deadlineAt) {
    return {
      kind: "finish",
      phase: "aborted",
      reason: "wall_clock_timeout",
      detail: `The job ran past its wall-clock deadline; ${lost}`,
    };
  }
  if (job.attempt >= job.maxAttempts) {
    return { kind: "finish", phase: "failed", reason: "worker_lost", detail: capitalize(lost) };
  }
  return { kind: "run", note: capitalize(lost) };
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
