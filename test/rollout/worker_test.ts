import assert from "node:assert/strict";
import { nextStep, queuedJob, type RolloutJobRecord } from "../../lib/rollout/mod.ts";

const JOB: RolloutJobRecord = queuedJob({
  id: "job_1",
  groupId: "grp_1",
  index: 0,
  maxAttempts: 2,
  createdAt: 1000,
});

Deno.test("nextStep() runs a queued job, and one handed back by a shutdown with its note", () => {
  assert.deepEqual(nextStep(JOB, 5000), { kind: "run", note: null });
  assert.deepEqual(
    nextStep({ ...JOB, attempt: 1, detail: "Attempt 1 was stopped by a shutdown" }, 5000),
    { kind: "run", note: "Attempt 1 was stopped by a shutdown" },
  );
});

Deno.test("nextStep() leaves finished jobs alone and finishes cancelled ones", () => {
  for (const phase of ["done", "failed", "aborted"] as const) {
    assert.deepEqual(nextStep({ ...JOB, phase, cancelRequested: true }, 5000), { kind: "skip" });
  }
  assert.deepEqual(nextStep({ ...JOB, phase: "agent", cancelRequested: true }, 5000), {
    kind: "finish",
    phase: "aborted",
    reason: "cancelled",
    detail: "Cancelled by DELETE",
  });
});

Deno.test("nextStep() retries a job whose worker died while attempts remain, else fails it", () => {
  const lost = { ...JOB, phase: "agent" as const, attempt: 1, worker: "host:42", deadlineAt: 9000 };
  assert.deepEqual(nextStep(lost, 5000), {
    kind: "run",
    note: "Attempt 1 of 2 lost its worker (host:42) in phase agent",
  });
  assert.deepEqual(nextStep({ ...lost, attempt: 2 }, 5000), {
    kind: "finish",
    phase: "failed",
    reason: "worker_lost",
    detail: "Attempt 2 of 2 lost its worker (host:42) in phase agent",
  });
  assert.deepEqual(nextStep(lost, 9000), {
    kind: "finish",
    phase: "aborted",
    reason: "wall_clock_timeout",
    detail:
      "The job ran past its wall-clock deadline; attempt 1 of 2 lost its worker (host:42) in phase agent",
  });
});
