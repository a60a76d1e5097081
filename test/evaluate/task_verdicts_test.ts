/**
 * The base commit's runs kept by task: one run for many asks, across processes sharing a store;
 * a verdict past its life run again; the digest names what decides how the tests run, and only
 * that.
 */
import assert from "node:assert/strict";
import {
  type BaseRun,
  storeBaseRuns,
  type Task,
  taskDigest,
  TaskSchema,
} from "../../lib/evaluate/mod.ts";
import { keys } from "../../lib/kv/mod.ts";
import { pollUntil } from "../../lib/timing/mod.ts";

const TASK = TaskSchema.parse({
  repo: "/srv/repo",
  base_commit: "abc1234",
  runner: "pytest",
  fail_to_pass: ["t.py::a"],
  problem_statement: "Fix it",
});

const OPTIONS = { ttlMs: 60_000, leaseTtlMs: 5000, waitMs: 30_000 };

Deno.test("two processes asking at once for one task's base run share one run", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const one = storeBaseRuns(kv, { ...OPTIONS, holder: "p1" });
    const two = storeBaseRuns(kv, { ...OPTIONS, holder: "p2" });
    let runs = 0;
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => finish = resolve);
    const run = async (): Promise<BaseRun> => {
      runs++;
      await gate;
      return {
        missing: { reason: "runner_failed", detail: "x" },
        reason: "tests_failed",
        at: Date.now(),
      };
    };
    const asks = [one, two, one, two, one, two].map((runsOf) => runsOf.get(TASK, "local", run));
    // The run goes on under its lease while the others ask; then it finishes.
    const lease = keys.taskVerdictLease("base_run", await taskDigest(TASK, "local"));
    assert.ok(
      await pollUntil(async () => (await kv.get(lease)).value !== null, {
        timeoutMs: 10_000,
        intervalMs: 5,
      }),
    );
    finish();
    const verdicts = await Promise.all(asks);
    assert.equal(runs, 1);
    assert.deepEqual(new Set(verdicts.map((verdict) => JSON.stringify(verdict))).size, 1);
    // Another backend is another run.
    await one.get(TASK, "e2b", run);
    assert.equal(runs, 2);
  } finally {
    kv.close();
  }
});

Deno.test("a verdict past its life is run again; a run that throws keeps nothing", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const runs = storeBaseRuns(kv, { ...OPTIONS, holder: "p1" });
    const digest = await taskDigest(TASK, "local");
    await kv.set(keys.taskVerdict("base_run", digest), {
      missing: null,
      reason: "tests_failed",
      at: Date.now() - OPTIONS.ttlMs - 1,
    });
    let ran = 0;
    const fresh = await runs.get(TASK, "local", () => {
      ran++;
      return Promise.resolve({ missing: null, reason: "passed" as const, at: Date.now() });
    });
    assert.deepEqual([ran, fresh.reason], [1, "passed"]);

    const other = TaskSchema.parse({ ...TASK, base_commit: "def5678" });
    await assert.rejects(runs.get(other, "local", () => Promise.reject(new Error("boot failed"))));
    assert.equal(
      (await kv.get(keys.taskVerdict("base_run", await taskDigest(other, "local")))).value,
      null,
    );
    // Nor does it hold the lease: the next ask runs.
    const again = await runs.get(
      other,
      "local",
      () => Promise.resolve({ missing: null, reason: "tests_failed" as const, at: Date.now() }),
    );
    assert.equal(again.reason, "tests_failed");
  } finally {
    kv.close();
  }
});

Deno.test("the task digest names the repository, commit, tests, environment and backend, not the statement or labels", async () => {
  const base = await taskDigest(TASK, "local");
  assert.match(base, /^[0-9a-f]{32}$/);
  const same = (task: Task) => taskDigest(task, "local");
  // The same task written with its fields in another order, with another statement and labels.
  const reordered = TaskSchema.parse(Object.fromEntries(
    Object.entries({
      ...TASK,
      problem_statement: "Another wording",
      metadata: { source: "x" },
      judger: "tests",
    }).reverse(),
  ));
  assert.equal(await same(reordered), base);
  for (
    const changed of [
      { base_commit: "def5678" },
      { repo: "/srv/other" },
      { fail_to_pass: ["t.py::b"] },
      { pass_to_pass: ["t.py::c"] },
      { env: { A: "1" } },
      { pre_commands: ["true"] },
      { template: "img" },
      { timeout_ms: 1000 },
    ]
  ) {
    assert.notEqual(
      await same(TaskSchema.parse({ ...TASK, ...changed })),
      base,
      JSON.stringify(changed),
    );
  }
  assert.notEqual(await taskDigest(TASK, "e2b"), base);
});
