import assert from "node:assert/strict";
import {
  createRolloutGroup,
  getRolloutGroup,
  getRolloutJob,
  listActiveRolloutJobs,
  listGroupJobs,
  listRolloutGroups,
  modifyRolloutJob,
  queuedJob,
  readGroupTree,
  readRolloutBlob,
  readRolloutTask,
  type RolloutJobRecord,
  sweepExpiredRollouts,
  updateRolloutJob,
  writeRolloutBlob,
} from "../../lib/rollout/mod.ts";

function job(id: string, createdAt: number): RolloutJobRecord {
  return queuedJob({ id, groupId: "grp_1", index: 0, maxAttempts: 2, createdAt });
}

Deno.test("createRolloutGroup() writes the task, the group and its queued jobs; a taken id is refused", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const task = { repo: "/r", problem_statement: "y".repeat(200_000) };
    const group = await createRolloutGroup(
      kv,
      { id: "grp_1", createdAt: 1, jobs: ["job_b", "job_a"], settings: { n: 2 } },
      task,
      [job("job_b", 2), job("job_a", 1)],
    );
    assert.deepEqual(await readRolloutTask(kv, group), task);
    assert.deepEqual(await listActiveRolloutJobs(kv), ["job_a", "job_b"], "oldest first");
    assert.equal((await getRolloutJob(kv, "job_a")).value?.phase, "queued");
    await assert.rejects(
      createRolloutGroup(kv, { id: "grp_1", createdAt: 1, jobs: [], settings: {} }, task, []),
      /exists already/,
    );
  } finally {
    kv.close();
  }
});

Deno.test("updateRolloutJob() is compare-and-set, and a final phase leaves the active index", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await createRolloutGroup(kv, { id: "grp_1", createdAt: 1, jobs: ["job_a"], settings: {} }, {}, [
      job("job_a", 1),
    ]);
    const entry = (await getRolloutJob(kv, "job_a")) as Deno.KvEntry<RolloutJobRecord>;
    const running = await updateRolloutJob(kv, entry, {
      ...entry.value,
      phase: "agent",
      attempt: 1,
    });
    assert.ok(running);
    assert.equal(
      await updateRolloutJob(kv, entry, { ...entry.value, phase: "booting" }),
      null,
      "stale",
    );
    assert.deepEqual(await listActiveRolloutJobs(kv), ["job_a"]);
    const chunks = await writeRolloutBlob(kv, "job_a", 1, "patch", "diff --git a/x b/x\n");
    const done = await modifyRolloutJob(kv, "job_a", (current) => ({
      ...current,
      phase: "done",
      blobs: { patch: chunks },
    }));
    assert.equal(done?.value.phase, "done");
    assert.deepEqual(await listActiveRolloutJobs(kv), []);
    assert.equal(await readRolloutBlob(kv, done!.value, "patch"), "diff --git a/x b/x\n");
    assert.equal(await readRolloutBlob(kv, done!.value, "reward"), null);
    assert.equal(await modifyRolloutJob(kv, "job_missing", (current) => current), null);
  } finally {
    kv.close();
  }
});

Deno.test("sweepExpiredRollouts() deletes expired jobs with their blobs, then their emptied group and its work tree", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    // A work tree of several chunks, kept with the group.
    const tree = {
      digest: "d".repeat(32),
      commit: "c".repeat(40),
      bundle: new Uint8Array(150_000),
    };
    crypto.getRandomValues(tree.bundle.subarray(70_000, 130_000));
    const group = await createRolloutGroup(
      kv,
      { id: "grp_1", createdAt: 1, jobs: ["job_a", "job_b"], settings: {} },
      { repo: "tree:" + "d".repeat(32) },
      [job("job_a", 1), job("job_b", 2)],
      tree,
    );
    assert.deepEqual(group.tree, {
      digest: tree.digest,
      commit: tree.commit,
      chunks: 3,
      bytes: 150_000,
    });
    assert.deepEqual(await readGroupTree(kv, group), tree.bundle);
    const finish = async (id: string, expiresAt: number) => {
      const chunks = await writeRolloutBlob(kv, id, 1, "patch", "diff");
      await modifyRolloutJob(kv, id, (current) => ({
        ...current,
        phase: "done",
        attempt: 1,
        blobs: { patch: chunks },
        expiresAt,
      }));
    };
    await finish("job_a", 1000);
    await finish("job_b", 5000);
    assert.equal(await sweepExpiredRollouts(kv, 999), 0);
    assert.equal(await sweepExpiredRollouts(kv, 1000), 1);
    assert.equal((await getRolloutJob(kv, "job_a")).value, null);
    assert.equal((await getRolloutJob(kv, "job_b")).value?.phase, "done");
    assert.ok(await getRolloutGroup(kv, "grp_1"), "a job of the group remains");
    assert.equal(await sweepExpiredRollouts(kv, 5000), 1);
    assert.equal(await getRolloutGroup(kv, "grp_1"), null);
    const left: string[] = [];
    for await (const entry of kv.list({ prefix: [] })) left.push(JSON.stringify(entry.key));
    assert.deepEqual(left, [], "nothing of the group is left");
  } finally {
    kv.close();
  }
});

Deno.test("listRolloutGroups() pages the groups newest first; listGroupJobs() reads a group's jobs in order", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    for (const [id, createdAt] of [["grp_b", 20], ["grp_a", 10], ["grp_c", 30]] as const) {
      await createRolloutGroup(kv, { id, createdAt, jobs: [`job_${id}`], settings: {} }, {}, [
        { ...job(`job_${id}`, createdAt), groupId: id },
      ]);
    }
    const first = await listRolloutGroups(kv, { limit: 2 });
    assert.deepEqual(first.groups.map((group) => group.id), ["grp_c", "grp_b"]);
    assert.ok(first.cursor);
    const second = await listRolloutGroups(kv, { limit: 2, cursor: first.cursor });
    assert.deepEqual(second.groups.map((group) => group.id), ["grp_a"]);
    assert.equal(second.cursor, null);
    const group = (await getRolloutGroup(kv, "grp_b"))!;
    assert.deepEqual((await listGroupJobs(kv, group)).map((j) => j.id), ["job_grp_b"]);
    await kv.delete(["rollout_job", "job_grp_b"]);
    assert.deepEqual(await listGroupJobs(kv, group), [], "a job past its expiry is left out");
  } finally {
    kv.close();
  }
});
