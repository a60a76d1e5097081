import assert from "node:assert/strict";
import {
  createRolloutGroup,
  groupToolTurnsFamily,
  modifyRolloutJob,
  queuedJob,
  type RolloutJobRecord,
} from "../../lib/rollout/mod.ts";
import { renderExposition } from "../../lib/metrics/mod.ts";

/** A group of `n` queued jobs created at `createdAt`; returns its id and its jobs' ids. */
async function group(kv: Deno.Kv, id: string, n: number, createdAt: number) {
  const jobs = Array.from(
    { length: n },
    (_, index) =>
      queuedJob({ id: `job_${id}_${index}`, groupId: id, index, maxAttempts: 1, createdAt }),
  );
  await createRolloutGroup(
    kv,
    { id, createdAt, jobs: jobs.map((job) => job.id), settings: {} as never },
    { repo: "fixture:python_unittest" },
    jobs,
  );
  return jobs.map((job) => job.id);
}

/** Moves a job to `phase`, with `toolTurns` when done. */
function finish(kv: Deno.Kv, jobId: string, phase: RolloutJobRecord["phase"], toolTurns?: number) {
  return modifyRolloutJob(kv, jobId, (job) => ({
    ...job,
    phase,
    ...(toolTurns === undefined ? {} : { score: 1, toolTurns }),
  }));
}

const A = `grp_${"a".repeat(24)}`;
const B = `grp_${"b".repeat(24)}`;
const C = `grp_${"c".repeat(24)}`;

Deno.test("groupToolTurnsFamily() gives the mean, min and max tool turns of each group's done jobs, the newest groups first", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const a = await group(kv, A, 4, 1_000);
    await group(kv, B, 2, 2_000); // nothing done yet: no series
    const c = await group(kv, C, 1, 3_000);
    await finish(kv, a[0], "done", 1);
    await finish(kv, a[1], "done", 2);
    await finish(kv, a[2], "done", 6);
    await finish(kv, a[3], "failed"); // not a finished sample
    await finish(kv, c[0], "done", 0);
    assert.equal(
      renderExposition([await groupToolTurnsFamily(kv)]),
      [
        "# HELP rollout_gateway_group_tool_turns Tool turns per finished job of a rollout group (the newest groups): mean, min, max.",
        "# TYPE rollout_gateway_group_tool_turns gauge",
        `rollout_gateway_group_tool_turns{group="${C}",stat="mean"} 0`,
        `rollout_gateway_group_tool_turns{group="${C}",stat="min"} 0`,
        `rollout_gateway_group_tool_turns{group="${C}",stat="max"} 0`,
        `rollout_gateway_group_tool_turns{group="${A}",stat="mean"} 3`,
        `rollout_gateway_group_tool_turns{group="${A}",stat="min"} 1`,
        `rollout_gateway_group_tool_turns{group="${A}",stat="max"} 6`,
        "",
      ].join("\n"),
    );
    // Only the newest `limit` groups are read.
    const newest = await groupToolTurnsFamily(kv, 2);
    assert.deepEqual(newest.series.map((s) => s.labels[0][1]), [C, C, C]);
  } finally {
    kv.close();
  }
});

Deno.test("groupToolTurnsFamily() leaves out a group whose id is not one the gateway makes", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const [job] = await group(kv, 'grp_"}\nevil', 1, 1_000);
    await finish(kv, job, "done", 3);
    assert.deepEqual((await groupToolTurnsFamily(kv)).series, []);
  } finally {
    kv.close();
  }
});
