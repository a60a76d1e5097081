import assert from "node:assert/strict";
import { queuedJob, type RolloutJobRecord, spread, summarizeGroup } from "../../lib/rollout/mod.ts";

const job = (index: number, change: Partial<RolloutJobRecord>): RolloutJobRecord => ({
  ...queuedJob({ id: `job_${index}`, groupId: "grp_1", index, maxAttempts: 1, createdAt: 1 }),
  ...change,
});

Deno.test("spread() is the mean, least and most; null for nothing", () => {
  assert.deepEqual(spread([2, 4, 9]), { mean: 5, min: 2, max: 9 });
  assert.deepEqual(spread([-1]), { mean: -1, min: -1, max: -1 });
  assert.equal(spread([]), null);
});

Deno.test("summarizeGroup() counts every phase and spreads scores and tool turns over done jobs", () => {
  const group = {
    id: "grp_1",
    createdAt: 5,
    jobs: ["a", "b", "c", "d"],
    taskChunks: 1,
    settings: {},
  };
  const summary = summarizeGroup(group, [
    job(0, { phase: "done", score: 1, toolTurns: 3 }),
    job(1, { phase: "done", score: 0, toolTurns: 7 }),
    // A failed job's turns do not count: it has no reward to pair them with.
    job(2, { phase: "failed", toolTurns: 40 }),
    job(3, { phase: "agent" }),
  ]);
  assert.deepEqual(summary, {
    id: "grp_1",
    createdAt: 5,
    jobs: 4,
    phases: { queued: 0, booting: 0, agent: 1, evaluating: 0, done: 2, failed: 1, aborted: 0 },
    score: { mean: 0.5, min: 0, max: 1 },
    toolTurns: { mean: 5, min: 3, max: 7 },
  });
  const empty = summarizeGroup(group, []);
  assert.deepEqual([empty.score, empty.toolTurns, empty.phases.queued], [null, null, 0]);
});
